import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../infra/config';
import type { ServiceModules } from '../../infra/modules';
import { mergeModules } from '../../infra/modules';
import type { Logger } from '../../infra/observability/logger';
import { silentLogger } from '../../infra/observability/logger';
import type { Clock } from '../../infra/runtime/clock';
import type { RunningPlatform, Role } from '../../infra/runtime/platform';
import { startPlatform } from '../../infra/runtime/platform';
import { testAuthenticator } from './auth';
import type { TestDatabase } from './db';
import { createTestDatabase } from './db';
import { requireEnv } from './env';
import tally from './tally/projections';
import { tallyRead, tallyWrite } from './tally/routes';

export const tallyModules: ServiceModules = mergeModules({ write: [tallyWrite], read: [tallyRead], projections: tally.projections });

export interface TestPlatform extends RunningPlatform {
  database: TestDatabase;
  /** fetch relative to the server */
  http(path: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

/**
 * A platform process for a test: its own fresh database, the test authenticator, the sample
 * tally context, listening on a free port. `kafka: true` uses the test Kafka instead of the
 * PostgreSQL log.
 */
export const startTestPlatform = async (options: { role?: Role; modules?: ServiceModules; env?: Record<string, string>; kafka?: boolean; clock?: Clock; logger?: Logger; database?: TestDatabase } = {}): Promise<TestPlatform> => {
  const database = options.database ?? (await createTestDatabase('p'));
  const ownsDatabase = !options.database;
  const config = loadConfig({
    PORT: '0', PLATFORM_ENV: 'test', LOG_LEVEL: 'silent', DATABASE_URL: database.url, DATA_DIR: join(tmpdir(), `platform-test-${process.pid}`),
    ...(options.kafka ? { KAFKA_BROKERS: requireEnv('TEST_KAFKA_BROKERS') } : {}),
    // `platform serve` requires ROOT_URL: the split roles of a test share the issuer an all-in-one test process derives
    ...(options.role && options.role !== 'all' ? { ROOT_URL: 'http://127.0.0.1:0' } : {}),
    ...options.env,
  });
  const running = await startPlatform({ role: options.role ?? 'all', config, logger: options.logger ?? silentLogger(), modules: options.modules ?? tallyModules, clock: options.clock });
  running.kernel.authenticator = testAuthenticator;
  const address = running.app.server.address();
  const url = typeof address === 'object' && address ? `http://127.0.0.1:${address.port}` : running.url;
  return {
    ...running,
    url,
    database,
    http: (path, init) => fetch(`${url}${path}`, init),
    close: async () => {
      await running.stop();
      if (ownsDatabase) await database.drop();
    },
  };
};
