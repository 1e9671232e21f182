import { z } from 'zod';

/**
 * All configuration comes from the environment, validated once at start. A bad value stops the
 * process with one line per problem, naming the variable and what it expects.
 */
const optionalUrl = z.string().url().optional();
const int = (def: number, min = 0) => z.coerce.number().int().min(min).default(def);

/** one OpenID Connect login provider (identity): OIDC_PROVIDERS is a JSON list of these */
export const OidcProviderConfig = z.object({
  id: z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/).refine((id) => id !== 'password' && id !== 'siwe', 'password and siwe are reserved ids'),
  issuer: z.string().url(),
  clientId: z.string().min(1),
  clientSecret: z.string().min(1),
  scopes: z.array(z.string().min(1)).default(['openid', 'email', 'profile']),
  name: z.string().optional(),
});
export type OidcProviderConfig = z.infer<typeof OidcProviderConfig>;
const oidcProviders = z.string().transform((value, ctx) => {
  let parsed: unknown;
  try { parsed = JSON.parse(value); } catch { parsed = undefined; }
  const list = z.array(OidcProviderConfig).safeParse(parsed);
  if (!list.success || new Set(list.data.map((p) => p.id)).size !== list.data.length) {
    ctx.addIssue({ code: 'custom', message: 'a JSON list of {id, issuer, clientId, clientSecret, scopes?, name?} with distinct ids' });
    return z.NEVER;
  }
  return list.data;
});

export const ConfigSchema = z.object({
  HOST: z.string().default('127.0.0.1'),
  PORT: int(8080).pipe(z.number().max(65535)),
  DATA_DIR: z.string().default('./.data'),
  ROOT_URL: optionalUrl,
  PROBLEMS_BASE_URL: optionalUrl,
  PLATFORM_ENV: z.enum(['development', 'staging', 'production', 'test']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

  DATABASE_URL: optionalUrl,
  DATABASE_POOL_SIZE: int(20, 1),
  KAFKA_BROKERS: z.string().regex(/^[^,\s]+:\d+(,[^,\s]+:\d+)*$/, 'a comma-separated list of host:port').optional(),
  KAFKA_CLIENT_ID: z.string().default('platform'),
  KAFKA_PARTITIONS: int(3, 1),
  KAFKA_RETENTION_HOURS: int(168, 1),
  CLICKHOUSE_URL: optionalUrl,
  REDIS_URL: optionalUrl,
  /** prepended to every key, so several platforms (or test runs) can share one Redis */
  REDIS_KEY_PREFIX: z.string().min(1).max(100).default('platform:'),
  S3_ENDPOINT: optionalUrl,
  S3_ACCESS_KEY: z.string().optional(),
  S3_SECRET_KEY: z.string().optional(),
  S3_BUCKET: z.string().default('platform'),
  S3_REGION: z.string().default('us-east-1'),
  SMTP_URL: optionalUrl,
  MAIL_FROM: z.string().default('platform@localhost'),
  CLAMD_HOST: z.string().optional(),
  CLAMD_PORT: int(3310, 1),
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalUrl,
  PLATFORM_SECRET_KEY: z.string().regex(/^[A-Za-z0-9+/]{43,}={0,2}$/, 'base64 of at least 32 random bytes').optional(),

  BODY_LIMIT_BYTES: int(1_048_576, 1024),
  IDEMPOTENCY_TTL_HOURS: int(168, 1),
  /** group commit: most commands in one transaction, and transactions of them in flight at once */
  COMMAND_BATCH_MAX_SIZE: int(64, 1),
  COMMAND_BATCH_CONCURRENCY: int(2, 1),
  SHUTDOWN_GRACE_MS: int(10_000, 0),
  CORS_ALLOWED_ORIGINS: z.string().refine((v) => !v.split(',').some((o) => o.trim() === '*'), 'a comma-separated list of origins, no wildcard (spec 000 rule 10)').default(''),

  // Gateway (spec 000: rate limits, upstream protection, split deployment, versioning)
  RATE_LIMIT_USER_PER_MIN: int(1000, 1),
  RATE_LIMIT_ADMIN_PER_MIN: int(5000, 1),
  RATE_LIMIT_ANONYMOUS_PER_MIN: int(300, 1),
  /** the per-tenant ceiling until billing provides one per plan */
  RATE_LIMIT_TENANT_PER_MIN: int(20_000, 1),
  GRPC_CALL_TIMEOUT_MS: int(5000, 1),
  /** split deployment: the gateway role proxies mutations here */
  WRITE_API_URL: optionalUrl,
  /** split deployment: the gateway role proxies queries here */
  READ_API_URL: optionalUrl,
  UPSTREAM_MAX_SOCKETS: int(128, 1),
  /** RFC 9745 Deprecation of /v1: an ISO date or HTTP-date */
  API_DEPRECATION: z.string().refine((v) => !Number.isNaN(Date.parse(v)), 'a date').optional(),
  /** RFC 8594 Sunset of /v1: an ISO date or HTTP-date */
  API_SUNSET: z.string().refine((v) => !Number.isNaN(Date.parse(v)), 'a date').optional(),
  AUDIT_REPLAY_INTERVAL_MS: int(30_000, 10),
  /** where the OpenAPI snapshots of deprecated versions live (default docs/api-snapshots) */
  API_SNAPSHOT_DIR: z.string().optional(),

  // Identity login providers
  /** OpenID Connect providers: JSON [{id, issuer, clientId, clientSecret, scopes?, name?}] */
  OIDC_PROVIDERS: oidcProviders.optional(),
  /** Sign-In with Ethereum: the domain the EIP-4361 message must name (default: the host of ROOT_URL) */
  SIWE_DOMAIN: z.string().optional(),
  /** Sign-In with Ethereum: accepted chain ids, comma-separated */
  SIWE_CHAIN_IDS: z.string().regex(/^\d+(,\d+)*$/, 'a comma-separated list of chain ids').default('1'),
}).superRefine((c, ctx) => {
  if (c.S3_ENDPOINT && (!c.S3_ACCESS_KEY || !c.S3_SECRET_KEY)) {
    ctx.addIssue({ code: 'custom', path: ['S3_ACCESS_KEY'], message: 'S3_ACCESS_KEY and S3_SECRET_KEY are required with S3_ENDPOINT' });
  }
  if (Boolean(c.WRITE_API_URL) !== Boolean(c.READ_API_URL)) {
    ctx.addIssue({ code: 'custom', path: [c.WRITE_API_URL ? 'READ_API_URL' : 'WRITE_API_URL'], message: 'WRITE_API_URL and READ_API_URL are set together (split deployment)' });
  }
});

export type Config = z.infer<typeof ConfigSchema> & { rootUrl: string; problemsBaseUrl: string };

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export const loadConfig = (env: NodeJS.ProcessEnv = process.env): Config => {
  const relevant = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== ''));
  const parsed = ConfigSchema.safeParse(relevant);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.') || '(config)'}: ${i.message}${i.path[0] && env[String(i.path[0])] !== undefined ? ` (got "${env[String(i.path[0])]}")` : ''}`));
  }
  const c = parsed.data;
  const rootUrl = (c.ROOT_URL ?? `http://${c.HOST}:${c.PORT}`).replace(/\/$/, '');
  return { ...c, rootUrl, problemsBaseUrl: (c.PROBLEMS_BASE_URL ?? `${rootUrl}/problems`).replace(/\/$/, '') };
};

/** the real engines a split role needs; refuses to start a role against embedded defaults */
export const requireReal = (config: Config, names: (keyof Config)[]): void => {
  const missing = names.filter((n) => !config[n]);
  if (missing.length) throw new ConfigError(missing.map((n) => `${String(n)}: required to run this role against real engines`));
};
