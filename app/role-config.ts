import type { Config } from '../infra/config';
import { ConfigError, isLoopback } from '../infra/config';
import { billingSettingsOf } from '../commands/billing/settings';
import type { RegisteredProjection } from '../infra/projections/projection';
import type { Role } from './platform';

/**
 * What a role needs beyond a well-formed environment, checked before any engine is contacted:
 * `platform serve` runs it at start-up, and the docker-compose check runs it on the file.
 */
export interface RoleCheck {
  role: Role;
  config: Config;
  /** for role projector: the projection named on the command line */
  projection?: string;
  /** the projections this platform registers */
  projections: readonly Pick<RegisteredProjection, 'name' | 'mode' | 'target'>[];
}

export const roleConfigProblems = ({ role, config, projection, projections }: RoleCheck): string[] => {
  const dedicated = dedicatedProblems(config.DEDICATED_PROJECTIONS ?? [], projections);
  // `platform start` runs on embedded defaults: nothing else is required
  if (role === 'all') return dedicated;
  const serve = `\`platform serve ${role}\``;
  const problems: string[] = [];
  if (!config.DATABASE_URL) {
    problems.push(
      `DATABASE_URL: required by ${serve}; set it to the PostgreSQL every role shares, such as postgres://user:password@host:5432/platform`,
    );
  }
  // without it each role derives its issuer from its own port and refuses the others' tokens
  if (!config.ROOT_URL) {
    problems.push(
      `ROOT_URL: required by ${serve}; set it to the public URL of the gateway, such as https://api.example.com, the same for every role (it is the token issuer)`,
    );
  }
  // tests share one generated key through DATA_DIR; anywhere else roles would each make their own
  if (!config.PLATFORM_SECRET_KEY && config.PLATFORM_ENV !== 'test') {
    problems.push(
      `PLATFORM_SECRET_KEY: required by ${serve}; give every role the same base64 value of 32 random bytes (openssl rand -base64 32)`,
    );
  }
  if (role === 'projector') problems.push(...projectorProblems(projection, projections));
  problems.push(...dedicated);
  if (role === 'gateway') problems.push(...billingTargetProblems(config));
  if (needsAuditStore(projections) && !config.CLICKHOUSE_URL) {
    problems.push(
      `CLICKHOUSE_URL: required by ${serve}; the roles share one audit store and the embedded one (chdb) belongs to a single process, so set it to a ClickHouse server every role uses, such as http://user:password@clickhouse:8123/platform`,
    );
  }
  return problems;
};

/**
 * Every role of a platform with audit views opens the audit store (ClickHouse): read-api reads it,
 * write-api exports and anonymizes from it, workers fill it (the audit consumer, the views'
 * projector, archiving), and every role — the gateway and a projector too — prepares the views at
 * start, creating their tables on a new database (a role on a store of its own would create them
 * where the others never look).
 */
const needsAuditStore = (projections: RoleCheck['projections']): boolean =>
  projections.some((p) => p.target === 'clickhouse');

/** the names of the projections a projector can run */
const asyncNames = (projections: readonly Pick<RegisteredProjection, 'name' | 'mode'>[]): string[] =>
  projections.filter((p) => p.mode === 'async').map((p) => p.name);

const projectorProblems = (name: string | undefined, projections: RoleCheck['projections']): string[] => {
  const runnable = asyncNames(projections);
  const choice = runnable.length
    ? `name one of its async projections: ${runnable.join(', ')}`
    : 'this platform has no async projection, so there is nothing for a projector to run (the workers role runs async projections too)';
  const named = projections.find((p) => p.name === name);
  if (!name) return [`projection: \`platform serve projector <name>\` needs a projection; ${choice}`];
  if (!named) return [`projection ${JSON.stringify(name)}: no such projection; ${choice}`];
  if (named.mode !== 'async')
    return [
      `projection ${JSON.stringify(name)}: inline (kept in each command's transaction), not run by a projector; ${choice}`,
    ];
  return [];
};

/** the async projections the workers role (and `platform start`) runs: all but those left to their projectors */
export const asyncProjectionsOfWorkers = (
  projections: readonly Pick<RegisteredProjection, 'name' | 'mode'>[],
  dedicated: readonly string[],
): string[] => asyncNames(projections).filter((name) => !dedicated.includes(name));

/** a dedicated projection must be one a projector can run, or it would silently run nowhere */
const dedicatedProblems = (names: readonly string[], projections: RoleCheck['projections']): string[] => {
  const runnable = asyncNames(projections);
  const unknown = names.filter((n) => !runnable.includes(n));
  return unknown.length
    ? [
        `DEDICATED_PROJECTIONS: ${unknown.map((n) => JSON.stringify(n)).join(', ')} ${unknown.length > 1 ? 'are' : 'is'} not an async projection of this platform; name some of: ${runnable.join(', ') || '(none)'}`,
      ]
    : [];
};

/**
 * A gateway in front of write-api asks billing over gRPC before every counted request. write-api
 * serves plaintext gRPC on loopback only, so a gateway dialing another host without mutual TLS
 * could never be answered — and would refuse every mutation as billing-unavailable.
 */
const billingTargetProblems = (config: Config): string[] => {
  const billing = billingSettingsOf(config);
  const target = billing.grpc.target;
  if (!billing.enabled || !target || billing.grpc.tls || isLoopback(target.replace(/:\d+$/, ''))) return [];
  return [
    `GRPC_TLS_CERT: \`platform serve gateway\` asks billing at ${target}, which serves gRPC beyond loopback only with mutual TLS; set GRPC_TLS_CERT, GRPC_TLS_KEY and GRPC_TLS_CA here (a client certificate) and on write-api (its server certificate), for example from \`bash scripts/grpc-certs.sh\``,
  ];
};

/** throws a ConfigError with every problem of the role's configuration */
export const checkRoleConfig = (check: RoleCheck): void => {
  const problems = roleConfigProblems(check);
  if (problems.length) throw new ConfigError(problems);
};
