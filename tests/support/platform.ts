import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../../infra/config';
import type { Kernel } from '../../infra/kernel';
import type { ServiceParts } from '../../infra/services';
import { mergeServiceParts } from '../../infra/services';
import type { Logger } from '../../infra/observability/logger';
import { silentLogger } from '../../infra/observability/logger';
import type { Clock } from '../../infra/runtime/clock';
import type { Role } from '../../app/platform';
import { startPlatform } from '../../app/platform';
import { captureLogger } from './log-capture';
import { testAuthenticator } from './auth';
import type { TestClock } from './clock';
import type { TestDatabase } from './db';
import type { TestResolver } from './resolver';
import { createTestDatabase } from './db';
import { requireEnv } from './env';
import type { TestServiceName } from './services';
import { loadTestServices } from './services';
import type { LogLine } from './split';
import { startSplitPlatform } from './split';
import { SPLIT } from './topology';
import tally from './tally/projections';
import { tallyRead, tallyWrite } from './tally/routes';

export const tallyServices: ServiceParts = mergeServiceParts({
  write: [tallyWrite],
  read: [tallyRead],
  projections: tally.projections,
});

export interface TestPlatform {
  /** the process's kernel (all-in-one), or a control kernel beside the split roles (tests/support/split.ts) */
  kernel: Kernel;
  /** all-in-one only: the HTTP application */
  app?: FastifyInstance;
  /** where the test sends requests: the process, or the gateway of the split roles */
  url: string;
  topology: 'all' | 'split';
  /** the server processes by role: this process all-in-one (`all`), or each role's child process in the split run */
  pids: Record<string, number>;
  /** where each of those roles listens (`all`: url) */
  roleUrls: Record<string, string>;
  database: TestDatabase;
  /** fetch relative to the server */
  http(path: string, init?: RequestInit): Promise<Response>;
  /** the log lines of the platform (with captureLogs) */
  logLines(): LogLine[];
  stop(): Promise<void>;
  close(): Promise<void>;
}

export interface TestPlatformOptions {
  /** a role other than all starts that one role in this process, whatever the topology of the run */
  role?: Role;
  /** names (tests/support/services.ts) run in either topology; a ServiceParts object only in this process */
  services?: ServiceParts | readonly TestServiceName[];
  env?: Record<string, string>;
  kafka?: boolean;
  /** a TestClock is shared with the split roles; any other clock runs only all-in-one */
  clock?: Clock | TestClock;
  /** the names the outbound guard resolves (tests/support/resolver.ts), in every role */
  resolver?: TestResolver;
  logger?: Logger;
  /** keep the platform's log lines (info and above) for logLines() */
  captureLogs?: boolean;
  database?: TestDatabase;
}

const isTestClock = (clock: Clock | undefined): clock is TestClock =>
  typeof (clock as TestClock | undefined)?.shareThrough === 'function';

/**
 * A platform for a test: its own fresh database, the test authenticator, the sample tally context
 * (unless services say otherwise). In the split run (PLATFORM_TEST_TOPOLOGY=split) and without an
 * explicit role, the roles run as separate processes behind a gateway (tests/support/split.ts);
 * otherwise one process listens on a free port here. `kafka: true` uses the test Kafka instead of
 * the PostgreSQL log (the split roles always do).
 */
export const startTestPlatform = async (options: TestPlatformOptions = {}): Promise<TestPlatform> => {
  const role = options.role ?? 'all';
  const names = Array.isArray(options.services) ? (options.services as readonly TestServiceName[]) : null;
  if (SPLIT && role === 'all') {
    if (options.services && !names)
      throw new Error('a suite of the split run names its services (tests/support/services.ts)');
    if (options.clock && !isTestClock(options.clock))
      throw new Error('a suite of the split run moves time with a TestClock (tests/support/clock.ts)');
    if (options.logger) throw new Error('a suite of the split run reads logs with captureLogs, not its own logger');
    const split = await startSplitPlatform({
      services: names ?? ['tally'],
      auth: 'token',
      env: options.env,
      clock: options.clock,
      resolver: options.resolver,
      database: options.database,
      logLevel: options.captureLogs ? 'info' : undefined,
    });
    return {
      kernel: split.kernel,
      url: split.url,
      topology: 'split',
      database: split.database,
      pids: Object.fromEntries(Object.entries(split.processes).map(([role, child]) => [role, child.pid!])),
      roleUrls: split.roleUrls,
      http: (path, init) => fetch(`${split.url}${path}`, init),
      logLines: split.logLines,
      stop: split.stop,
      close: split.stop,
    };
  }

  const database = options.database ?? (await createTestDatabase('p'));
  const ownsDatabase = !options.database;
  const config = loadConfig({
    PORT: '0',
    PLATFORM_ENV: 'test',
    LOG_LEVEL: 'silent',
    DATABASE_URL: database.url,
    DATA_DIR: join(tmpdir(), `platform-test-${process.pid}`),
    ...(options.kafka ? { KAFKA_BROKERS: requireEnv('TEST_KAFKA_BROKERS') } : {}),
    // `platform serve` requires ROOT_URL: the split roles of a test share the issuer an all-in-one test process derives
    ...(options.role && options.role !== 'all' ? { ROOT_URL: 'http://127.0.0.1:0' } : {}),
    ...options.env,
  });
  const capture = options.captureLogs ? captureLogger() : null;
  const services = names
    ? await loadTestServices(names)
    : ((options.services as ServiceParts | undefined) ?? tallyServices);
  const running = await startPlatform({
    role,
    config,
    logger: capture?.logger ?? options.logger ?? silentLogger(),
    services,
    clock: options.clock,
    resolver: options.resolver?.resolver,
  });
  running.kernel.authenticator = testAuthenticator;
  const address = running.app.server.address();
  const url = typeof address === 'object' && address ? `http://127.0.0.1:${address.port}` : running.url;
  const close = async () => {
    await running.stop();
    if (ownsDatabase) await database.drop();
  };
  return {
    kernel: running.kernel,
    app: running.app,
    url,
    topology: 'all',
    database,
    pids: { all: process.pid },
    roleUrls: { all: url },
    http: (path, init) => fetch(`${url}${path}`, init),
    logLines: () => capture?.lines ?? [],
    stop: running.stop,
    close,
  };
};
