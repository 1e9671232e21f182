import { parseArgs } from 'node:util';
import { z } from 'zod';
import type { Role } from '../platform';
import type { AuditInvocation } from './audit';
import { AUDIT_USAGE, parseAudit } from './audit';
import type { ModulesInvocation } from './modules';
import { MODULES_USAGE, parseModules } from './modules';

/**
 * The command line of `platform`, parsed without side effects: main.ts runs what this returns,
 * and the docker-compose check asks it whether each service's command is one the CLI knows.
 */
export const USAGE = `platform — the multi-tenant SaaS backend

Usage:
  platform start                                   run every role in one process on embedded engines
  platform serve <gateway|write-api|read-api|workers>
  platform serve projector <name>                  run one role against the engines named by the environment
  platform migrate                                 apply database migrations
  platform projections list                        projections and their mode and version
  platform projections status                      position and lag of each projection
  platform projections rebuild <name> [--tenant <id>]
  platform owner create --email <e> --password <p>  create the first platform owner (identity)
  platform replay --topic <t> (--from-offset <n> | --from-time <iso>) [--to <offset|iso>] --into <consumer group|projection>
${AUDIT_USAGE}
${MODULES_USAGE}

Configuration comes from the environment; see README.md.`;

export type ServeRole = Exclude<Role, 'all'>;
export const SERVE_ROLES: readonly ServeRole[] = ['gateway', 'write-api', 'read-api', 'workers', 'projector'];

export type Position = { offset: number } | { time: number };

export type Invocation =
  | { command: 'help' }
  | { command: 'start' }
  | { command: 'serve'; role: ServeRole; projection?: string }
  | { command: 'migrate' }
  | { command: 'projections'; action: 'list' }
  | { command: 'projections'; action: 'status' }
  | { command: 'projections'; action: 'rebuild'; name: string; tenant?: string }
  | { command: 'owner'; action: 'create'; email: string; password: string }
  | { command: 'replay'; topic: string; from: Position; to?: Position; into: string }
  | AuditInvocation
  | ModulesInvocation;

/** a command line the CLI does not accept; the message says what it needs */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

const OwnerEmail = z.string().trim().email().max(254);

const options = <T extends Record<string, { type: 'string' } | { type: 'boolean' }>>(
  args: string[],
  spec: T,
  allowPositionals = false,
) => {
  try {
    return parseArgs({ args, options: spec, allowPositionals, strict: true });
  } catch (error) {
    // node's messages name the option (Unknown option '--x'); they are sentences already
    throw new UsageError((error as Error).message);
  }
};

const time = (text: string): number => {
  const t = Date.parse(text);
  if (Number.isNaN(t)) throw new UsageError(`not an ISO 8601 time: ${text}`);
  return t;
};

const offset = (text: string, flag: string): number => {
  if (!/^\d+$/.test(text)) throw new UsageError(`${flag} needs a whole number (got ${JSON.stringify(text)})`);
  return Number(text);
};

export const parseCommandLine = (argv: string[]): Invocation => {
  const [command, sub, ...rest] = argv;
  switch (command) {
    case undefined:
    case 'help':
    case '--help':
      return { command: 'help' };
    case 'start':
      if (sub !== undefined) throw new UsageError(`start takes no arguments (got ${JSON.stringify(sub)})`);
      return { command: 'start' };
    case 'serve': {
      if (!sub || !SERVE_ROLES.includes(sub as ServeRole))
        throw new UsageError(
          `serve needs a role: ${SERVE_ROLES.join(', ')}${sub ? ` (got ${JSON.stringify(sub)})` : ''}`,
        );
      if (sub === 'projector') {
        if (!rest[0])
          throw new UsageError('serve projector needs the name of a projection (platform projections list shows them)');
        if (rest.length > 1) throw new UsageError('serve projector runs one projection');
        return { command: 'serve', role: 'projector', projection: rest[0] };
      }
      if (rest.length)
        throw new UsageError(`serve ${sub} takes no further arguments (got ${JSON.stringify(rest.join(' '))})`);
      return { command: 'serve', role: sub as ServeRole };
    }
    case 'migrate':
      if (sub !== undefined) throw new UsageError(`migrate takes no arguments (got ${JSON.stringify(sub)})`);
      return { command: 'migrate' };
    case 'projections': {
      if (sub === 'list') return { command: 'projections', action: 'list' };
      if (sub === 'status') return { command: 'projections', action: 'status' };
      if (sub !== 'rebuild') throw new UsageError('projections needs list, status or rebuild');
      const { values, positionals } = options(rest, { tenant: { type: 'string' } }, true);
      if (positionals.length !== 1) throw new UsageError('projections rebuild needs one projection name');
      return { command: 'projections', action: 'rebuild', name: positionals[0]!, tenant: values.tenant };
    }
    case 'owner': {
      if (sub !== 'create') throw new UsageError('owner needs create --email <e> --password <p>');
      const { values } = options(rest, { email: { type: 'string' }, password: { type: 'string' } });
      if (!values.email || !values.password) throw new UsageError('owner create needs --email and --password');
      const email = OwnerEmail.safeParse(values.email);
      if (!email.success)
        throw new UsageError(
          `owner create: --email must be an email address such as owner@example.com (got ${JSON.stringify(values.email)})`,
        );
      return { command: 'owner', action: 'create', email: email.data, password: values.password };
    }
    case 'replay': {
      const { values } = options(argv.slice(1), {
        topic: { type: 'string' },
        'from-offset': { type: 'string' },
        'from-time': { type: 'string' },
        to: { type: 'string' },
        into: { type: 'string' },
      });
      if (!values.topic || !values.into) throw new UsageError('replay needs --topic and --into');
      if (Boolean(values['from-offset']) === Boolean(values['from-time']))
        throw new UsageError('replay needs exactly one of --from-offset and --from-time');
      const from = values['from-offset']
        ? { offset: offset(values['from-offset'], '--from-offset') }
        : { time: time(values['from-time']!) };
      const to =
        values.to === undefined
          ? undefined
          : /^\d+$/.test(values.to)
            ? { offset: Number(values.to) }
            : { time: time(values.to) };
      return { command: 'replay', topic: values.topic, from, to, into: values.into };
    }
    case 'modules':
      return parseModules(
        argv.slice(1),
        (args) => {
          const { values, positionals } = options(args, { tenant: { type: 'string' }, yes: { type: 'boolean' } }, true);
          return { tenant: values.tenant, yes: values.yes, positionals };
        },
        (message) => new UsageError(message),
      );
    case 'audit':
      return parseAudit(
        argv.slice(1),
        (args) => options(args, { tenant: { type: 'string' } }).values,
        (message) => new UsageError(message),
      );
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  }
};
