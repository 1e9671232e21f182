import type { FastifyInstance } from 'fastify';
import '@fastify/websocket';
import { buildApp } from '../gateway/app';
import { setGatewayPorts } from '../infra/http/gateway-ports';
import { moduleStatusOf } from '../commands/modules/installations';
import { modulesProjection } from '../projections/modules';
import { OutboxRelay } from '../workers/outbox-relay';
import { startAuditRelay } from '../workers/audit-relay';
import { ProjectorWorker } from '../workers/projector';
import { MaintenanceWorker } from '../workers/maintenance';
import type { Config } from '../infra/config';
import { loadConfig } from '../infra/config';
import { startEmbeddedPostgres } from '../infra/embedded/postgres';
import type { Engines } from '../infra/kernel';
import { Kernel } from '../infra/kernel';
import { openKeyValueCache } from '../infra/cache';
import { createIpcCache } from '../infra/cluster/ipc-cache';
import { httpWorkerIndex } from '../infra/cluster/worker';
import type { AnalyticsStore } from '../infra/clickhouse';
import { openAnalyticsStore } from '../infra/clickhouse';
import { databaseOfUrl } from '../infra/clickhouse/http';
import { createMailer } from '../infra/mail';
import { createObjectStore, InvalidObjectKeyError, ObjectNotFoundError } from '../infra/objects';
import { Guard } from '../infra/resilience/guard';
import { guardPort } from '../infra/resilience/guard-port';
import { createVirusScanner } from '../infra/scan';
import { isDomainError } from '../domain/shared/errors';
import { loadSecrets } from '../infra/secrets';
import { createLog } from '../infra/log';
import type { ServiceParts } from '../infra/services';
import { loadServices } from './services';
import type { Logger } from '../infra/observability/logger';
import { createLogger } from '../infra/observability/logger';
import { startTelemetry, stopTelemetry } from '../infra/observability/telemetry';
import { createPool } from '../infra/postgres/db';
import { trackPool } from '../infra/observability/metrics';
import { startBackgroundMetrics } from '../workers/metrics';
import { migrate } from '../infra/postgres/migrate';
import type { Clock, IdGenerator } from '../infra/runtime/clock';
import type { Resolver } from '../infra/security/outbound';
import { asyncProjectionsOfWorkers, checkRoleConfig } from './role-config';

/** What a process runs. `all` is `platform start`: every role in one process. */
export type Role = 'all' | 'gateway' | 'write-api' | 'read-api' | 'workers' | 'projector';

export interface PlatformOptions {
  role: Role;
  /** for role projector: the projection it runs */
  projection?: string;
  config?: Config;
  logger?: Logger;
  /** the services it runs; defaults to every service of app/services.ts */
  services?: ServiceParts;
  clock?: Clock;
  ids?: IdGenerator;
  /** how the outbound guard resolves names (tests: a stub; tests/support/resolver.ts) */
  resolver?: Resolver;
  /** listen on the configured HOST:PORT (default true) */
  listen?: boolean;
  /**
   * what of the role this process runs (default whole): an HTTP cluster (app/cluster.ts) splits role
   * all into its primary (background: relay, projectors, background workers; no HTTP) and its HTTP
   * workers (http: the routes of write, read and the edge; none of the single-owner work)
   */
  part?: 'whole' | 'http' | 'background';
  /**
   * told the name of each step of the start as it begins (engines, migrations, topics, projections…):
   * a start that never ends says where it stands (the split test harness prints the last step)
   */
  onStep?: (step: string) => void;
}

export interface RunningPlatform {
  kernel: Kernel;
  app: FastifyInstance;
  /** the address the HTTP server listens on */
  url: string;
  /** the PostgreSQL it uses (the embedded server's, when it started one) */
  databaseUrl: string;
  stop: () => Promise<void>;
}

const serves = (role: Role, part: PlatformOptions['part'] = 'whole') => ({
  write: part !== 'background' && (role === 'all' || role === 'gateway' || role === 'write-api'),
  read: part !== 'background' && (role === 'all' || role === 'gateway' || role === 'read-api'),
  relay: part !== 'http' && (role === 'all' || role === 'workers'),
  projectors: part !== 'http' && (role === 'all' || role === 'workers'),
});

/** the PostgreSQL a kernel of openKernel connects to (the embedded server's URL when it started one) */
const databaseUrls = new WeakMap<Kernel, string>();

/**
 * The edge runs where clients arrive: the all-in-one process, or the gateway role, which proxies to
 * write-api and read-api when WRITE_API_URL and READ_API_URL are set (and mounts the plugins
 * in-process otherwise). write-api and read-api take the principal only from the gateway.
 */
const edgeOf = (role: Role, config: Config) => {
  if (role === 'write-api' || role === 'read-api') return { edge: false, principalFrom: 'gateway' as const };
  if (role === 'gateway' && config.WRITE_API_URL && config.READ_API_URL)
    return { proxy: { writeUrl: config.WRITE_API_URL, readUrl: config.READ_API_URL } };
  return {};
};

/**
 * Starts a platform process: configuration, engines (embedded or real), migrations, projections,
 * HTTP and workers. /ready answers 200 only once migrations, the log and the projections are
 * ready; stop() drains requests, stops workers (committing their positions) and closes engines.
 */
export const startPlatform = async (options: PlatformOptions): Promise<RunningPlatform> => {
  const config = options.config ?? loadConfig();
  const logger = options.logger ?? createLogger({ level: config.LOG_LEVEL });
  const role = options.role;
  const step = options.onStep ?? (() => undefined);
  const services = options.services ?? (await loadServices());
  checkRoleConfig({ role, config, projection: options.projection, projections: services.projections });
  step('telemetry');
  await startTelemetry({ serviceName: `platform-${role}`, endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT });

  const kernel = await openKernel({
    config,
    logger,
    role,
    services,
    clock: options.clock,
    ids: options.ids,
    resolver: options.resolver,
    onStep: step,
  });
  const { db, log } = kernel;

  const what = serves(role, options.part);
  step('http routes');
  const app = await buildApp(kernel, { write: what.write, read: what.read, ...edgeOf(role, config) });
  const worker = httpWorkerIndex();
  if (worker !== null && config.PLATFORM_ENV === 'test') {
    // tests observe which HTTP worker answered (tests/e2e/cluster.spec.ts); never outside PLATFORM_ENV=test
    app.addHook('onSend', async (_request, reply) => {
      reply.header('x-platform-worker', String(worker));
    });
    app.websocketServer.on('headers', (headers: string[]) => headers.push(`x-platform-worker: ${worker}`));
  }
  const listen = options.listen ?? true;
  // a cluster's HTTP worker takes connections only once prepared: the others serve meanwhile (a restart)
  const listenAt = () => {
    step('listen');
    return app.listen({ host: config.HOST, port: config.PORT });
  };
  let url = listen && worker === null ? await listenAt() : 'http://in-process';
  logger.info({ role, url, log: log.kind }, 'platform listening; preparing');

  try {
    step('migrations');
    await migrate(db, { onProgress: (p) => logger.info(p, 'migration applied') });
    kernel.readiness.migrations = true;
    // files: S3_BUCKET (or the local folder) is created when missing; a store down at start shows in /health
    step('object store bucket');
    await kernel.engines.objects
      .ensureBucket()
      .catch((error: unknown) =>
        logger.warn({ err: error }, 'the object store bucket could not be checked or created'),
      );
    step('log ping');
    await log.ping();
    step('log topics');
    await log.ensureTopics(platformTopics(config));
    kernel.readiness.log = true;
    step('projections');
    await kernel.projections.prepare(({ name, applied, total }) =>
      logger.info({ projection: name, applied, total }, 'projection rebuild'),
    );
    // the module registry answers the gateway's module check (404 module-not-found) wherever it runs
    if (kernel.services.projections.some((p) => p.name === modulesProjection.name)) {
      setGatewayPorts(kernel, { moduleStatus: (tenantId, slug) => moduleStatusOf(kernel, tenantId, slug) });
    }
    const mounted = [...(what.write ? kernel.services.write : []), ...(what.read ? kernel.services.read : [])];
    for (const plugin of mounted) {
      if (!plugin.start) continue;
      step(`start ${plugin.namespace}`);
      await plugin.start(kernel);
    }
    kernel.readiness.projections = true;
    if (listen && worker !== null) url = await listenAt();
  } catch (error) {
    await app.close();
    await kernel.close();
    throw error;
  }

  step('workers');
  const workers: { stop(): Promise<void> }[] = [];
  if (what.relay) {
    const relay = new OutboxRelay(db, kernel.store, log, logger, {
      topicDefaults: { partitions: config.KAFKA_PARTITIONS, retentionMs: config.KAFKA_RETENTION_HOURS * 3600_000 },
    });
    relay.start();
    workers.push(relay);
    workers.push(startAuditRelay(kernel));
    workers.push(new MaintenanceWorker(kernel).start());
    for (const set of kernel.services.workers) {
      for (const worker of set.workers(kernel)) {
        worker.start();
        workers.push(worker);
      }
    }
  }
  if (what.projectors || role === 'projector') {
    const names =
      role === 'projector'
        ? [options.projection ?? '']
        : asyncProjectionsOfWorkers(kernel.projections.projections, config.DEDICATED_PROJECTIONS ?? []);
    for (const name of names) workers.push(new ProjectorWorker(kernel, kernel.projections.get(name).name).start());
  }
  // the figures of the work this process runs, computed at scrape time (relay backlog, projection lag, queues, the bus)
  if (what.relay || what.projectors || role === 'projector')
    workers.push(
      startBackgroundMetrics(kernel, {
        relays: what.relay,
        projections: role === 'projector' ? [options.projection ?? ''] : null,
      }),
    );
  logger.info({ role }, 'platform ready');

  let stopping: Promise<void> | null = null;
  const stop = () => {
    stopping ??= (async () => {
      logger.info('draining requests and stopping workers');
      await app.close();
      await Promise.all(workers.map((w) => w.stop()));
      await kernel.close();
    })();
    return stopping;
  };
  return { kernel, app, url, databaseUrl: databaseUrls.get(kernel) ?? config.DATABASE_URL ?? '', stop };
};

/**
 * Engines and kernel without HTTP or workers: what the CLI commands and the roles share. Uses the
 * engines the environment names and embedded ones for the rest (PostgreSQL, the PostgreSQL log).
 */
export const openKernel = async (options: {
  config: Config;
  logger: Logger;
  role?: Role;
  services?: ServiceParts;
  clock?: Clock;
  ids?: IdGenerator;
  resolver?: Resolver;
  onStep?: (step: string) => void;
}): Promise<Kernel> => {
  const { config, logger } = options;
  const step = options.onStep ?? (() => undefined);
  const cleanup: (() => Promise<void>)[] = [];
  let databaseUrl = config.DATABASE_URL;
  if (!databaseUrl) {
    // a CLI command beside a running `platform start` uses its server
    step('embedded postgresql');
    const embedded = await startEmbeddedPostgres(config.DATA_DIR, logger, {
      useRunning: options.role === undefined,
      // an HTTP cluster's workers each have a pool of their own beside the primary's
      maxConnections: Math.max(200, (config.HTTP_WORKERS + 1) * (config.DATABASE_POOL_SIZE + 10)),
    });
    databaseUrl = embedded.url;
    cleanup.push(() => embedded.stop());
  }
  const db = createPool(databaseUrl, {
    max: config.DATABASE_POOL_SIZE,
    waitMs: config.DATABASE_POOL_WAIT_MS,
    applicationName: `platform-${options.role ?? 'cli'}`,
  });
  const untrackPool = trackPool(db);
  step('log');
  const log = await createLog(config, db, logger);
  step('engines');
  const engines = await openEngines(config, options.role ?? 'cli', databaseUrl, options.clock);
  // closed at shutdown only when this kernel opened it (another kernel of the process may have its own)
  let analyticsOpened: Promise<AnalyticsStore> | null = null;
  const openAnalytics = engines.analytics;
  engines.analytics = () => (analyticsOpened ??= openAnalytics());
  const services = options.services ?? (await loadServices());
  const kernel = new Kernel({
    config,
    logger,
    db,
    log,
    engines,
    services,
    clock: options.clock,
    ids: options.ids,
    role: options.role ?? 'cli',
    resolver: options.resolver,
  });
  databaseUrls.set(kernel, databaseUrl);
  kernel.health.register('postgresql', async () => {
    await db.query('SELECT 1');
  });
  if (log.kind === 'kafka') kernel.health.register('kafka', () => log.ping());
  if (config.REDIS_URL) kernel.health.register('valkey', () => engines.cache.ping());
  if (config.S3_ENDPOINT) kernel.health.register('s3', () => engines.objects.ping());
  if (config.CLICKHOUSE_URL) kernel.health.register('clickhouse', async () => (await engines.analytics()).ping());
  if (engines.scanner) kernel.health.register('clamav', () => engines.scanner!.ping());
  kernel.onClose('engines', async () => {
    await log.close();
    await engines.cache.close();
    if (analyticsOpened) await (await analyticsOpened.catch(() => null))?.close();
    untrackPool();
    await db.end();
    for (const step of cleanup.reverse()) await step();
    await stopTelemetry();
  });
  return kernel;
};

/**
 * The ClickHouse database: CLICKHOUSE_DATABASE, else the one CLICKHOUSE_URL names, else the
 * PostgreSQL database's name — one deployment's two stores stay paired (and each test database
 * gets audit views of its own in a shared chdb folder).
 */
export const analyticsDatabaseOf = (
  config: Pick<Config, 'CLICKHOUSE_DATABASE' | 'CLICKHOUSE_URL'>,
  databaseUrl: string,
): string => {
  if (config.CLICKHOUSE_DATABASE) return config.CLICKHOUSE_DATABASE;
  const named = config.CLICKHOUSE_URL ? databaseOfUrl(config.CLICKHOUSE_URL) : null;
  if (named) return named;
  const pg = decodeURIComponent(new URL(databaseUrl).pathname.replace(/^\//, '')).replace(/[^A-Za-z0-9_]/g, '_');
  return /^[A-Za-z_]/.test(pg) ? pg : `platform${pg ? `_${pg}` : ''}`;
};

const openEngines = async (config: Config, role: string, databaseUrl: string, clock?: Clock): Promise<Engines> => {
  const secrets = await loadSecrets({
    configured: config.PLATFORM_SECRET_KEY,
    dataDir: config.DATA_DIR,
    mayGenerate: role === 'all' || role === 'cli' || config.PLATFORM_ENV === 'test',
  });
  let analytics: Promise<AnalyticsStore> | null = null;
  // engines beyond the process answer within a deadline, behind a circuit breaker (spec 000 rules 1-4)
  const guarded = <T extends object>(
    port: T,
    name: string,
    remote: string | undefined,
    idempotent: ReadonlySet<string>,
    isFailure?: (e: unknown) => boolean,
    deadlines?: Record<string, number | null>,
    unguarded?: ReadonlySet<string>,
  ): T =>
    remote
      ? guardPort(
          port,
          new Guard({ name, timeoutMs: config.GRPC_CALL_TIMEOUT_MS, isFailure, clock }),
          idempotent,
          deadlines,
          unguarded,
        )
      : port;
  const objects = createObjectStore({
    dataDir: config.DATA_DIR,
    publicBaseUrl: config.rootUrl,
    signingSecret: secrets.key('objects.presign.v1').toString('base64'),
    clock,
    s3: config.S3_ENDPOINT
      ? {
          endpoint: config.S3_ENDPOINT,
          region: config.S3_REGION,
          accessKeyId: config.S3_ACCESS_KEY!,
          secretAccessKey: config.S3_SECRET_KEY!,
          bucket: config.S3_BUCKET,
        }
      : undefined,
  });
  const scanner = createVirusScanner({ clamdHost: config.CLAMD_HOST, clamdPort: config.CLAMD_PORT });
  return {
    secrets,
    // an HTTP worker of a cluster without Redis uses its primary's cache over IPC (infra/cluster/ipc-cache.ts)
    cache:
      !config.REDIS_URL && httpWorkerIndex() !== null
        ? createIpcCache(process)
        : await openKeyValueCache({ redisUrl: config.REDIS_URL, keyPrefix: config.REDIS_KEY_PREFIX, clock }),
    // a 5xx reply refuses one message (an unknown mailbox): an answer of the server, not the server failing
    mail: guarded(
      createMailer({ smtpUrl: config.SMTP_URL, mailFrom: config.MAIL_FROM, dataDir: config.DATA_DIR }),
      'smtp',
      config.SMTP_URL,
      new Set(),
      (e) => !isSmtpRefusal(e),
    ),
    objects: guarded(
      objects,
      's3',
      config.S3_ENDPOINT,
      OBJECT_READS,
      isObjectFailure,
      OBJECT_DEADLINES,
      OBJECT_START_CHECKS,
    ),
    analytics: () => {
      analytics ??= openAnalyticsStore({
        clickhouseUrl: config.CLICKHOUSE_URL,
        dataDir: config.DATA_DIR,
        database: analyticsDatabaseOf(config, databaseUrl),
      })
        // a ClickHouse server is guarded like the other remote engines (502/503/504 problems, a breaker),
        // with the client's own 30 s deadline: exports and archives read large ranges; its refusals of a query are answers
        .then((store) =>
          config.CLICKHOUSE_URL
            ? guardPort(
                store,
                new Guard({ name: 'clickhouse', timeoutMs: 30_000, isFailure: (e) => !isClickHouseAnswer(e), clock }),
                new Set(['query']),
              )
            : store,
        );
      return analytics;
    },
    // a scan reads its stream once: never retried
    scanner: scanner && guarded(scanner, 'clamav', config.CLAMD_HOST, new Set(), undefined, SCAN_DEADLINES),
  };
};

/** an error ClickHouse answered with (a refused query), as opposed to a failure to reach it */
const isClickHouseAnswer = (error: unknown): boolean => {
  const code = error instanceof Error && 'type' in error ? (error as { code?: unknown }).code : undefined;
  return (typeof code === 'string' || typeof code === 'number') && /^\d+$/.test(String(code));
};

/** an SMTP server's permanent refusal of one message (5xx reply) */
const isSmtpRefusal = (e: unknown): boolean => {
  const code = (e as { responseCode?: unknown } | null)?.responseCode;
  return typeof code === 'number' && code >= 500 && code < 600;
};

/** object store calls that may be repeated safely */
const OBJECT_READS = new Set(['get', 'head', 'list', 'presignGet', 'presignPut', 'presignPost']);
// --- files: object store and scanner calls that outlast the guard's 5 s deadline (begin) ---
/** a streamed put goes at its source's pace (the SDK's own timeouts apply); copies of 50 MB take a while */
const OBJECT_DEADLINES = { put: null, copy: 60_000, move: 60_000 };
/** the bucket check at start: a store down then is a warning and /health's, not the first failures of the circuit */
const OBJECT_START_CHECKS = new Set(['ensureBucket']);
/** a scan streams up to 50 MB to clamd, which has its own 30 s verdict deadline */
const SCAN_DEADLINES = { scan: 120_000 };
/** answers of the store (a missing object, a refused key) and refusals of the body it was fed (413) are no failure of S3 */
const isObjectFailure = (e: unknown): boolean =>
  !(e instanceof ObjectNotFoundError || e instanceof InvalidObjectKeyError || isDomainError(e));
// --- files (end) ---

/** the platform.<domain>.events topics the platform publishes to (spec 002, Events) */
export const platformTopics = (config: Config) => {
  const hours = config.KAFKA_RETENTION_HOURS;
  const domains = ['auth', 'module', 'money', 'files', 'notify', 'audit', 'billing', 'data'];
  return domains.map((d) => ({
    name: `platform.${d}.events`,
    partitions: config.KAFKA_PARTITIONS,
    // the audit topic keeps 720 h (spec 002, Limits)
    retentionMs: (d === 'audit' ? Math.max(720, hours) : hours) * 3600_000,
  }));
};
