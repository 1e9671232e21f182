import type { Config } from './config';
import type { CausationMeta } from './eventstore/event-store';
import { EventStore } from './eventstore/event-store';
import { CommandRunner, defaultRunnerOptions } from './eventstore/command-runner';
import { HealthRegistry } from './health';
import type { Authenticator } from './http/auth';
import { noAuthenticator } from './http/auth';
import type { LogPort } from './log/port';
import type { Logger } from './observability/logger';
import { AuditRecorder } from './audit';
import { Invalidations } from './invalidations';
import type { Db } from './postgres/db';
import { ProjectionEngine } from './projections/engine';
import type { Clock, IdGenerator } from './runtime/clock';
import { systemClock, uuidV7Ids } from './runtime/clock';
import type { ServiceParts } from './services';
import type { KeyValueCache } from './cache';
import type { AnalyticsStore } from './clickhouse';
import { migrateAnalytics } from './clickhouse/migrate';
import type { Mailer } from './mail';
import type { NotificationPort } from './notifications';
import { mailNotifications } from './notifications';
import type { People } from './people';
import { noPeople } from './people';
import type { ObjectStore } from './objects';
import type { VirusScanner } from './scan';
import type { PlatformSecrets } from './secrets';
import type { Resolver } from './security/outbound';
import { allowsPrivate, OutboundGuard } from './security/outbound';

export const PLATFORM_VERSION = '0.1.0';

/** What must be true before the process reports ready. */
export interface Readiness {
  migrations: boolean;
  log: boolean;
  projections: boolean;
  /** an HTTP worker of a cluster (infra/cluster/): its primary is ready too (always true outside a cluster) */
  primary: boolean;
}

/** Permissions registered by modules; system.* and platform.* are reserved (spec 000). */
export class PermissionRegistry {
  private readonly entries = new Map<string, { key: string; description: string; module: string }>();
  private source: (() => Promise<void>) | null = null;

  /**
   * Permissions kept outside this process (the modules' own, registered and archived by migrations
   * any process may run): `refresh` brings them up to date and current() calls it, so a reader that
   * awaits current() sees another process's change on its next request.
   */
  trackSource(refresh: () => Promise<void>): void {
    this.source ??= refresh;
  }

  /** this registry with the tracked source brought up to date (cheap when nothing changed) */
  async current(): Promise<this> {
    if (this.source) await this.source();
    return this;
  }

  register(module: string, permissions: Record<string, string>): void {
    for (const [key, description] of Object.entries(permissions)) {
      if (/^(system|platform)\./.test(key))
        throw new Error(`module ${module} may not register reserved permission ${key}`);
      if (!/^[a-z][a-z0-9_-]*(\.[a-z0-9_*-]+)+$/.test(key))
        throw new Error(`permission ${key} of module ${module} is not a dotted key`);
      this.entries.set(key, { key, description, module });
    }
  }

  /** permissions archived by their module (spec 002): hidden from the catalog; the data layer denies them even to roles that still hold them */
  unregister(keys: readonly string[]): void {
    for (const key of keys) this.entries.delete(key);
  }

  list(): { key: string; description: string; module: string }[] {
    return [...this.entries.values()].sort((a, b) => a.key.localeCompare(b.key));
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }
}

/** The engines beyond PostgreSQL and the log, each real or embedded as configured (DESIGN.md, Engines). */
export interface Engines {
  cache: KeyValueCache;
  mail: Mailer;
  objects: ObjectStore;
  /** ClickHouse or chdb, opened on first use (the embedded engine is large) */
  analytics: () => Promise<AnalyticsStore>;
  /** clamd when configured */
  scanner: VirusScanner | null;
  secrets: PlatformSecrets;
}

export interface KernelParts {
  config: Config;
  logger: Logger;
  db: Db;
  log: LogPort;
  engines: Engines;
  services: ServiceParts;
  clock?: Clock;
  ids?: IdGenerator;
  /** the role this process runs (all, gateway, write-api, …; cli for a command beside running roles) */
  role?: string;
  /** how the outbound guard resolves names (the system's resolver by default; a stub in tests) */
  resolver?: Resolver;
}

/**
 * The services every context stands on, wired once per process. Routes, handlers and workers
 * receive it instead of reaching for globals.
 */
export class Kernel {
  readonly config: Config;
  readonly logger: Logger;
  readonly db: Db;
  readonly log: LogPort;
  readonly engines: Engines;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly store: EventStore;
  readonly projections: ProjectionEngine;
  readonly commands: CommandRunner;
  readonly health = new HealthRegistry(PLATFORM_VERSION);
  readonly permissions = new PermissionRegistry();
  /** every connection to a destination a tenant or a module gave goes through it (infra/security/outbound.ts) */
  readonly outbound: OutboundGuard;
  readonly services: ServiceParts;
  /** the role of this process: a service's start hook serves what belongs to it there (billing serves gRPC in all and write-api) */
  readonly role: string;
  readonly readiness: Readiness = { migrations: false, log: false, projections: false, primary: true };
  /** replaced by the identity service when it is installed */
  authenticator: Authenticator = noAuthenticator;
  /**
   * the platform's own messages (infra/notifications.ts): straight to the mail port until the
   * notification service installs its queue
   */
  notifications: NotificationPort;
  /**
   * the directory of people (infra/people.ts): identity's, over its read models, when the
   * platform runs them (ServiceParts.people); a platform without identity knows nobody
   */
  readonly people: People;
  /** named resources that close on shutdown, in reverse order of registration */
  private readonly closers: { name: string; close: () => Promise<void> }[] = [];

  constructor(parts: KernelParts) {
    this.config = parts.config;
    this.logger = parts.logger;
    this.db = parts.db;
    this.log = parts.log;
    this.engines = parts.engines;
    this.services = parts.services;
    this.role = parts.role ?? 'cli';
    this.clock = parts.clock ?? systemClock;
    this.ids = parts.ids ?? uuidV7Ids;
    this.notifications = mailNotifications(parts.engines.mail);
    this.people = parts.services.people ?? noPeople;
    this.outbound = new OutboundGuard({ allowPrivate: allowsPrivate(parts.config), resolver: parts.resolver });
    this.onClose('outbound', async () => this.outbound.close());
    this.store = new EventStore(this.clock, this.ids);
    this.projections = new ProjectionEngine(this.db, this.store, parts.services.projections, () => this.analytics());
    this.commands = new CommandRunner(this.db, this.store, this.projections, {
      ...defaultRunnerOptions,
      idempotencyTtlMs: parts.config.IDEMPOTENCY_TTL_HOURS * 3600_000,
      batch: {
        maxSize: parts.config.COMMAND_BATCH_MAX_SIZE,
        concurrency: parts.config.COMMAND_BATCH_CONCURRENCY,
        onFailure: (error, commands) =>
          this.logger.warn({ err: error, commands }, 'a command batch failed; its commands run alone'),
      },
      onAfterCommitFailure: (error) =>
        this.logger.error({ err: error }, 'a step after a committed command failed; the command stands'),
    });
    for (const plugin of [...parts.services.write, ...parts.services.read]) {
      if (plugin.permissions) this.permissions.register(plugin.namespace, plugin.permissions);
    }
  }

  get ready(): boolean {
    return this.readiness.migrations && this.readiness.log && this.readiness.projections && this.readiness.primary;
  }

  /**
   * while the process is still starting: the first start step not done yet (null once started). A
   * request is not judged before then — a token would be refused for keys not loaded yet.
   */
  get startingReason(): string | null {
    if (!this.readiness.migrations) return 'migrations have not run yet';
    if (!this.readiness.log) return 'the log is not reachable';
    if (!this.readiness.projections) return 'projections are being prepared';
    return null;
  }

  /** the first readiness condition not yet met, for GET /ready */
  get notReadyReason(): string | null {
    return this.startingReason ?? (this.readiness.primary ? null : 'the cluster primary is not ready');
  }

  private analyticsStore: Promise<AnalyticsStore> | null = null;

  /**
   * The ClickHouse store (ClickHouse over HTTP, or chdb in process) with its schema migrations
   * applied (infra/clickhouse/migrations): opened on first use, so processes that never touch the
   * audit views never load the engine.
   */
  analytics(): Promise<AnalyticsStore> {
    this.analyticsStore ??= (async () => {
      const store = await this.engines.analytics();
      const applied = await migrateAnalytics(store, this.db);
      if (applied) this.logger.info({ applied }, 'ClickHouse migrations applied');
      return store;
    })().catch((error: unknown) => {
      this.analyticsStore = null;
      throw error;
    });
    return this.analyticsStore;
  }

  private auditRecorder: AuditRecorder | null = null;

  /** the audit write pipeline of this process (infra/audit.ts), opened on first use and flushed at close */
  get audit(): AuditRecorder {
    if (!this.auditRecorder) {
      const recorder = new AuditRecorder(this);
      this.auditRecorder = recorder;
      this.onClose('audit', () => recorder.close());
    }
    return this.auditRecorder;
  }

  private invalidationsOfProcess: Invalidations | null = null;

  /**
   * cache invalidation by events delivered through the log to every process (infra/invalidations.ts);
   * subscribes only once a handler is installed, and stops before the engines close
   */
  get invalidations(): Invalidations {
    if (!this.invalidationsOfProcess) {
      const invalidations = new Invalidations(this.log, this.logger);
      this.invalidationsOfProcess = invalidations;
      this.onClose('invalidations', () => invalidations.close());
    }
    return this.invalidationsOfProcess;
  }

  onClose(name: string, close: () => Promise<void>): void {
    this.closers.push({ name, close });
  }

  async close(): Promise<void> {
    for (const { name, close } of this.closers.splice(0).reverse()) {
      await close().catch((error: unknown) => this.logger.error({ err: error }, `closing ${name} failed`));
    }
  }
}

export const systemMeta = (tenantId: string, traceId: string | null = null): CausationMeta => ({
  tenantId,
  actorId: 'system',
  traceId,
  correlationId: traceId,
  causationId: null,
});
