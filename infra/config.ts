import { availableParallelism } from 'node:os';
import { z } from 'zod';

/**
 * All configuration comes from the environment, validated once at start. A bad value stops the
 * process with one line per problem, naming the variable and what it expects.
 */
const url = (example: string) => z.string().url(`expected a URL such as ${example}`);
export const isLoopback = (host: string): boolean =>
  host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
const isUrl = (v: string, schemes: RegExp) => URL.canParse(v) && schemes.test(new URL(v).protocol);
const int = (def: number, min = 0) =>
  z.coerce
    .number({ error: `expected a whole number ≥ ${min}` })
    .int(`expected a whole number ≥ ${min}`)
    .min(min, `expected a whole number ≥ ${min}`)
    .default(def);
const megabytes = (def: number) =>
  z.coerce
    .number({ error: 'expected a number of megabytes such as 10 or 0.5' })
    .positive('expected a number of megabytes above 0')
    .max(5120, 'expected at most 5120 MB')
    .default(def);
const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: `expected one of ${values.join(', ')}` });

/** one OpenID Connect login provider (identity): OIDC_PROVIDERS is a JSON list of these */
export const OidcProviderConfig = z.object({
  id: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,62}$/)
    .refine((id) => id !== 'password' && id !== 'siwe', 'password and siwe are reserved ids'),
  issuer: z.string().url(),
  clientId: z.string().min(1),
  clientSecret: z.string().min(1),
  scopes: z.array(z.string().min(1)).default(['openid', 'email', 'profile']),
  name: z.string().optional(),
});
export type OidcProviderConfig = z.infer<typeof OidcProviderConfig>;
const oidcProviders = z.string().transform((value, ctx) => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    parsed = undefined;
  }
  const list = z.array(OidcProviderConfig).safeParse(parsed);
  if (!list.success || new Set(list.data.map((p) => p.id)).size !== list.data.length) {
    ctx.addIssue({
      code: 'custom',
      message: 'a JSON list of {id, issuer, clientId, clientSecret, scopes?, name?} with distinct ids',
    });
    return z.NEVER;
  }
  return list.data;
});

export const ConfigSchema = z
  .object({
    HOST: z.string().default('127.0.0.1'),
    PORT: int(8080).pipe(z.number().max(65535, 'expected a port number from 0 to 65535')),
    DATA_DIR: z.string().default('./.data'),
    ROOT_URL: url('https://api.example.com').optional(),
    /** where links in mails point (verify-email, reset-password, accept-invite, confirm-email-change pages); default ROOT_URL, which serves minimal pages */
    APP_URL: url('https://app.example.com').optional(),
    PROBLEMS_BASE_URL: url('https://api.example.com/problems').optional(),
    PLATFORM_ENV: oneOf(['development', 'staging', 'production', 'test']).default('development'),
    LOG_LEVEL: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** outbound connections to destinations tenants give may reach loopback, private and metadata addresses (default: true in development and test only; infra/security/outbound.ts) */
    OUTBOUND_ALLOW_PRIVATE: z.enum(['true', 'false'], { error: 'expected true or false' }).optional(),

    DATABASE_URL: z
      .string()
      .refine(
        (v) => isUrl(v, /^postgres(ql)?:$/),
        'expected a postgres:// URL such as postgres://user:password@host:5432/platform',
      )
      .optional(),
    DATABASE_POOL_SIZE: int(20, 1),
    /** how long a request waits for a free database connection before 503 service-unavailable */
    DATABASE_POOL_WAIT_MS: int(5000, 100),
    KAFKA_BROKERS: z
      .string()
      .regex(/^[^,\s]+:\d+(,[^,\s]+:\d+)*$/, 'expected a comma-separated list of host:port, such as kafka:9092')
      .optional(),
    KAFKA_CLIENT_ID: z.string().default('platform'),
    /** a prefix of every topic and consumer group on the cluster, for platforms that share one Kafka (default none) */
    KAFKA_NAMESPACE: z
      .string()
      .regex(/^[A-Za-z0-9._-]*$/, 'expected letters, digits, dots, dashes or underscores, such as staging.')
      .default(''),
    KAFKA_PARTITIONS: int(3, 1),
    KAFKA_RETENTION_HOURS: int(168, 1),
    CLICKHOUSE_URL: url('http://user:password@clickhouse:8123/platform').optional(),
    /** the ClickHouse database of the audit views (default: the one CLICKHOUSE_URL names, else the PostgreSQL database's name) */
    CLICKHOUSE_DATABASE: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, 'expected a plain identifier such as platform')
      .optional(),
    REDIS_URL: url('redis://valkey:6379').optional(),
    /** prepended to every key, so several platforms (or test runs) can share one Redis */
    REDIS_KEY_PREFIX: z.string().min(1).max(100).default('platform:'),
    S3_ENDPOINT: url('http://s3:9000').optional(),
    S3_ACCESS_KEY: z.string().optional(),
    S3_SECRET_KEY: z.string().optional(),
    S3_BUCKET: z.string().default('platform'),
    S3_REGION: z.string().default('us-east-1'),
    SMTP_URL: url('smtp://user:password@mail.example:587').optional(),
    MAIL_FROM: z.string().default('platform@localhost'),
    CLAMD_HOST: z.string().optional(),
    CLAMD_PORT: int(3310, 1),
    /** files: `skip` releases uploads unscanned (scan status skipped), for `npm start` without clamd; development only */
    FILES_SCAN: oneOf(['clamd', 'skip']).default('clamd'),
    // Files (spec 002, Limits)
    FILES_STAGING_TTL_HOURS: int(24, 1),
    FILES_STAGING_MAX_PER_TENANT: int(100, 1),
    FILES_PRESIGN_TTL_MIN: int(15, 1).pipe(
      z.number().max(10_080, "expected at most 10080 minutes (7 days, S3's longest signature)"),
    ),
    FILES_MAX_IMAGE_SIZE_MB: megabytes(10),
    FILES_MAX_DOCUMENT_SIZE_MB: megabytes(50),
    FILES_IMAGE_PROCESSING_TIMEOUT_SEC: int(30, 1),
    /** decompression bombs: an image with more pixels is refused before it is decoded */
    FILES_IMAGE_MAX_PIXELS: int(50_000_000, 1),
    FILES_SOFT_DELETE_RETENTION_DAYS: int(30, 1),
    FILES_ORPHAN_MIN_AGE_HOURS: int(24, 1),
    FILES_ORPHAN_SCAN_INTERVAL_HOURS: int(24, 1),
    /** scans (and image jobs) a workers process runs at once */
    FILES_SCAN_CONCURRENCY: int(4, 1),
    /** how often an idle files worker looks for staged files and jobs */
    FILES_WORKER_POLL_MS: int(1000, 10),
    OTEL_EXPORTER_OTLP_ENDPOINT: url('http://otel-collector:4318').optional(),
    /** the bearer token GET /metrics asks of a scraper (infra/observability/metrics-route.ts); unset: /metrics refuses everyone */
    METRICS_TOKEN: z
      .string()
      .regex(/^[A-Za-z0-9._~+/=-]{24,256}$/, 'expected 24 to 256 token characters, such as openssl rand -hex 24')
      .optional(),
    PLATFORM_SECRET_KEY: z
      .string()
      .regex(/^[A-Za-z0-9+/]{43,}={0,2}$/, 'expected base64 of at least 32 random bytes (openssl rand -base64 32)')
      .optional(),

    BODY_LIMIT_BYTES: int(1_048_576, 1024),
    IDEMPOTENCY_TTL_HOURS: int(168, 1),
    /** group commit: most commands in one transaction, and transactions of them in flight at once */
    COMMAND_BATCH_MAX_SIZE: int(64, 1),
    COMMAND_BATCH_CONCURRENCY: int(2, 1),
    SHUTDOWN_GRACE_MS: int(10_000, 0),
    /**
     * HTTP worker processes of `platform start` and of each HTTP role of `platform serve` (node:cluster,
     * infra/cluster/primary.ts): one per core by default; 1 serves from the one process, as before
     */
    HTTP_WORKERS: int(availableParallelism(), 1),
    /**
     * async projections only `platform serve projector <name>` runs (comma-separated): the workers
     * role and `platform start` leave them to their projectors, so each scales and fails on its own
     */
    DEDICATED_PROJECTIONS: z
      .string()
      .regex(/^[a-z0-9._-]+(,[a-z0-9._-]+)*$/, 'a comma-separated list of projection names, such as audit.domain')
      .transform((v) => v.split(','))
      .optional(),
    CORS_ALLOWED_ORIGINS: z
      .string()
      .refine(
        (v) => !v.split(',').some((o) => o.trim() === '*'),
        'a comma-separated list of origins, no wildcard (spec 000 rule 10)',
      )
      .default(''),

    // Gateway (spec 000: rate limits, upstream protection, split deployment, versioning)
    RATE_LIMIT_USER_PER_MIN: int(1000, 1),
    RATE_LIMIT_ADMIN_PER_MIN: int(5000, 1),
    RATE_LIMIT_ANONYMOUS_PER_MIN: int(300, 1),
    /** a module's key, per module within the tenant it acts for (README, Modules and data) */
    RATE_LIMIT_MODULE_PER_MIN: int(1000, 1),
    /** the per-tenant ceiling until billing provides one per plan */
    RATE_LIMIT_TENANT_PER_MIN: int(20_000, 1),
    GRPC_CALL_TIMEOUT_MS: int(5000, 1),
    /** split deployment: the gateway role proxies mutations here */
    WRITE_API_URL: url('http://write-api:8080').optional(),
    /** split deployment: the gateway role proxies queries here */
    READ_API_URL: url('http://read-api:8080').optional(),
    UPSTREAM_MAX_SOCKETS: int(128, 1),
    /** how long the gateway sends again a request write-api or read-api did not take (restarting) before answering 503 */
    UPSTREAM_UNDELIVERED_RETRY_MS: int(3000, 0),
    /** RFC 9745 Deprecation of /v1: an ISO date or HTTP-date */
    API_DEPRECATION: z
      .string()
      .refine((v) => !Number.isNaN(Date.parse(v)), 'a date')
      .optional(),
    /** RFC 8594 Sunset of /v1: an ISO date or HTTP-date */
    API_SUNSET: z
      .string()
      .refine((v) => !Number.isNaN(Date.parse(v)), 'a date')
      .optional(),
    /** audit relay: how often it looks for records staged in the audit outbox */
    AUDIT_RELAY_IDLE_MS: int(250, 10),
    /** audit relay: the longest back-off while the log refuses the outbox's records */
    AUDIT_REPLAY_INTERVAL_MS: int(30_000, 10),
    /** audit: days records stay in ClickHouse (spec 002: 90); at least 40, so a month is archived before it leaves */
    AUDIT_HOT_DAYS: int(90, 40),
    /** audit: years monthly cold archives are kept in the object store before they are deleted (spec 002: 7) */
    AUDIT_COLD_YEARS: int(7, 1),
    /** where the OpenAPI snapshots of deprecated versions live (default docs/api-snapshots) */
    API_SNAPSHOT_DIR: z.string().optional(),

    /** identity: recovery-code attempts per client address per 15 minutes, whatever accounts they try */
    RECOVERY_ATTEMPTS_PER_ADDRESS: int(20, 1),

    // Identity login providers
    /** OpenID Connect providers: JSON [{id, issuer, clientId, clientSecret, scopes?, name?}] */
    OIDC_PROVIDERS: oidcProviders.optional(),
    /** Sign-In with Ethereum: the domain the EIP-4361 message must name (default: the host of ROOT_URL) */
    SIWE_DOMAIN: z.string().optional(),
    /** Sign-In with Ethereum: accepted chain ids, comma-separated */
    SIWE_CHAIN_IDS: z
      .string()
      .regex(/^\d+(,\d+)*$/, 'a comma-separated list of chain ids')
      .default('1'),

    // Billing (spec 001; commands/billing/settings.ts reads these)
    /** false: billing is not deployed (self-hosted): every gateway check passes, money keeps its defaults, no gRPC, no escalation */
    BILLING_ENABLED: z.enum(['true', 'false'], { error: 'expected true or false' }).default('true'),
    BILLING_TRIAL_DAYS: int(14, 0).pipe(z.number().max(365, 'expected a whole number of days from 0 to 365')),
    BILLING_LIMIT_CACHE_TTL_SEC: int(300, 1),
    /** the gateway's plan_info cache: a duration such as 15m, 90s or 1h */
    BILLING_CACHE_TTL: z
      .string()
      .regex(/^(\d+|(\d+h)?(\d+m)?(\d+s)?)$/, 'expected a duration such as 15m, 90s or 1h')
      .refine((v) => v !== '', 'expected a duration such as 15m')
      .default('15m'),
    BILLING_ESCALATION_INTERVAL_SEC: int(60, 1),
    BILLING_WEBHOOK_TOLERANCE_SEC: int(300, 1),
    STRIPE_WEBHOOK_SECRET: z.string().min(1).optional(),
    PADDLE_WEBHOOK_SECRET: z.string().min(1).optional(),
    GRPC_HOST: z.string().min(1).default('127.0.0.1'),
    /** default 50051 (0 under PLATFORM_ENV=test: any free port) */
    GRPC_PORT: z.coerce
      .number({ error: 'expected a port number from 0 to 65535' })
      .int('expected a port number from 0 to 65535')
      .min(0, 'expected a port number from 0 to 65535')
      .max(65535, 'expected a port number from 0 to 65535')
      .optional(),
    /** mutual TLS of gRPC: PEM file paths (or PEM text); all three or none */
    GRPC_TLS_CERT: z.string().min(1).optional(),
    GRPC_TLS_KEY: z.string().min(1).optional(),
    GRPC_TLS_CA: z.string().min(1).optional(),
    /** split deployment: where the gateway reaches billing's gRPC (default: the host of WRITE_API_URL, GRPC_PORT) */
    BILLING_GRPC_TARGET: z
      .string()
      .regex(/^[^\s:]+:\d{1,5}$/, 'expected host:port such as write-api:50051')
      .optional(),
  })
  .superRefine((c, ctx) => {
    const tls = [c.GRPC_TLS_CERT, c.GRPC_TLS_KEY, c.GRPC_TLS_CA].filter(Boolean).length;
    if (tls !== 0 && tls !== 3)
      ctx.addIssue({
        code: 'custom',
        path: ['GRPC_TLS_CERT'],
        message: 'GRPC_TLS_CERT, GRPC_TLS_KEY and GRPC_TLS_CA are set together (mutual TLS), or none of them',
      });
    if (tls === 0 && !isLoopback(c.GRPC_HOST)) {
      ctx.addIssue({
        code: 'custom',
        path: ['GRPC_HOST'],
        message:
          'gRPC without TLS listens on loopback only; set GRPC_TLS_CERT, GRPC_TLS_KEY and GRPC_TLS_CA (mutual TLS) to listen elsewhere',
      });
    }
    if (c.S3_ENDPOINT && (!c.S3_ACCESS_KEY || !c.S3_SECRET_KEY)) {
      ctx.addIssue({
        code: 'custom',
        path: ['S3_ACCESS_KEY'],
        message: 'S3_ACCESS_KEY and S3_SECRET_KEY are required with S3_ENDPOINT',
      });
    }
    if (c.FILES_SCAN === 'skip' && c.PLATFORM_ENV !== 'development') {
      ctx.addIssue({
        code: 'custom',
        path: ['FILES_SCAN'],
        message:
          'skip (release files without a virus scan) is accepted only with PLATFORM_ENV=development; unset it or set it to clamd',
      });
    }
    if (Boolean(c.WRITE_API_URL) !== Boolean(c.READ_API_URL)) {
      ctx.addIssue({
        code: 'custom',
        path: [c.WRITE_API_URL ? 'READ_API_URL' : 'WRITE_API_URL'],
        message: 'WRITE_API_URL and READ_API_URL are set together (split deployment)',
      });
    }
  });

export type Config = z.infer<typeof ConfigSchema> & {
  rootUrl: string;
  appUrl: string;
  problemsBaseUrl: string;
  /** the environment the configuration was read from: services read their own variables (MONEY_*, NOTIFY_*, …) from it, so a test's or a role's environment reaches them the same way */
  env: Readonly<Record<string, string | undefined>>;
};

/** A configuration the process cannot run with: one line per problem, naming the variable and what to do. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
    this.name = 'ConfigError';
  }
}

/** a context setting's whole number in [min, max], def when unset; one message names the range */
export const wholeNumber = (def: number, min: number, max: number) =>
  z.coerce
    .number({ error: `expected a whole number from ${min} to ${max}` })
    .int(`expected a whole number from ${min} to ${max}`)
    .min(min, `expected a whole number from ${min} to ${max}`)
    .max(max, `expected a whole number from ${min} to ${max}`)
    .default(def);

/**
 * A context's own variables (the names `mine` picks; an empty value counts as unset) parsed by its
 * schema; each problem is a ConfigError line naming its variable, as loadConfig's are.
 */
export const loadSettingsSection = <S extends z.ZodType>(
  schema: S,
  mine: (name: string) => boolean,
  label: string,
  env: NodeJS.ProcessEnv,
): z.output<S> => {
  const relevant = Object.fromEntries(Object.entries(env).filter(([k, v]) => mine(k) && v !== ''));
  const parsed = schema.safeParse(relevant);
  if (!parsed.success)
    throw new ConfigError(parsed.error.issues.map((i) => `${String(i.path[0] ?? label)}: ${i.message}`));
  return parsed.data;
};

/** variables whose values may carry credentials: a problem with them never repeats the value */
const SECRET_BEARING = new Set([
  'DATABASE_URL',
  'CLICKHOUSE_URL',
  'REDIS_URL',
  'SMTP_URL',
  'S3_SECRET_KEY',
  'PLATFORM_SECRET_KEY',
  'OIDC_PROVIDERS',
  'STRIPE_WEBHOOK_SECRET',
  'PADDLE_WEBHOOK_SECRET',
  'GRPC_TLS_KEY',
  'METRICS_TOKEN',
]);

const describeIssue = (issue: z.core.$ZodIssue, env: NodeJS.ProcessEnv): string => {
  const name = String(issue.path[0] ?? '(config)');
  const value = env[name];
  const got = value !== undefined && !SECRET_BEARING.has(name) ? ` (got ${JSON.stringify(value)})` : '';
  return `${issue.path.join('.') || name}: ${issue.message}${got}`;
};

/** one line per variable: its first problem is the one to fix */
const firstPerVariable = (issues: z.core.$ZodIssue[]): z.core.$ZodIssue[] => {
  const seen = new Set<string>();
  return issues.filter((issue) => {
    const key = issue.path.join('.');
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
};

export const loadConfig = (env: NodeJS.ProcessEnv = process.env): Config => {
  const relevant = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== ''));
  const parsed = ConfigSchema.safeParse(relevant);
  if (!parsed.success) {
    throw new ConfigError(firstPerVariable(parsed.error.issues).map((i) => describeIssue(i, env)));
  }
  const c = parsed.data;
  const rootUrl = (c.ROOT_URL ?? `http://${c.HOST}:${c.PORT}`).replace(/\/$/, '');
  return {
    ...c,
    env: { ...env },
    rootUrl,
    appUrl: (c.APP_URL ?? rootUrl).replace(/\/$/, ''),
    problemsBaseUrl: (c.PROBLEMS_BASE_URL ?? `${rootUrl}/problems`).replace(/\/$/, ''),
  };
};
