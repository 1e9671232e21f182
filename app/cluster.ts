import { join } from 'node:path';
import type { Config } from '../infra/config';
import type { KeyValueCache } from '../infra/cache';
import { createMemoryCache } from '../infra/cache/memory';
import type { ClickHouseServer } from '../infra/clickhouse/server';
import { startClickHouseServer } from '../infra/clickhouse/server';
import type { HttpCluster } from '../infra/cluster/primary';
import { startHttpCluster } from '../infra/cluster/primary';
import { serveClusterMetrics } from '../infra/observability/metrics-cluster';
import type { Logger } from '../infra/observability/logger';
import type { Role, RunningPlatform } from './platform';
import { startPlatform } from './platform';
import { loadServices } from './services';
import { checkRoleConfig } from './role-config';

/** the roles that serve HTTP, which run as a cluster of HTTP_WORKERS processes when it is above 1 */
export const HTTP_ROLES: ReadonlySet<Role> = new Set<Role>(['all', 'gateway', 'write-api', 'read-api']);

export interface RunningPrimary {
  cluster: HttpCluster;
  stop(): Promise<void>;
}

/**
 * The primary of `platform start` or of `platform serve <HTTP role>` with HTTP_WORKERS > 1
 * (README "HTTP workers"; docs/decisions.md).
 *
 * `platform start` (role all): the primary does the single-owner work first — embedded PostgreSQL,
 * migrations, the relay, the projectors, the background workers (what role workers does) — and
 * serves the embedded ClickHouse (chdb binds its folder to one process) over ClickHouse's HTTP
 * interface on loopback; once ready it forks the HTTP workers, which run the HTTP part of role all on
 * its PostgreSQL (DATABASE_URL) and its ClickHouse (CLICKHOUSE_URL). A `platform serve` role's primary
 * only supervises. Without REDIS_URL the primary's in-process cache is the workers' (over IPC).
 *
 * stop(): every worker drains, then the primary stops its own work and engines.
 */
export const startClusterPrimary = async (options: {
  role: Role;
  config: Config;
  logger: Logger;
  onFailure: (code: number) => void;
}): Promise<RunningPrimary> => {
  const { role, config, logger } = options;
  // a bad configuration is said once, by the primary, before any worker starts
  const services = await loadServices();
  checkRoleConfig({ role, config, projections: services.projections });

  let platform: RunningPlatform | null = null;
  let clickhouse: ClickHouseServer | null = null;
  let cache: KeyValueCache | null = null;
  const env: Record<string, string> = {};
  const stopOwn = async () => {
    await clickhouse
      ?.close()
      .catch((error: unknown) => logger.warn({ err: error }, 'closing the ClickHouse server failed'));
    if (platform) await platform.stop();
    else await cache?.close();
  };
  try {
    if (role === 'all') {
      platform = await startPlatform({ role, config, logger, services, listen: false, part: 'background' });
      env.DATABASE_URL = platform.databaseUrl;
      if (!config.CLICKHOUSE_URL) {
        // migrated here, once, before the workers read the audit views through the server
        await platform.kernel.analytics();
        clickhouse = await startClickHouseServer({ folder: join(config.DATA_DIR, 'clickhouse') });
        env.CLICKHOUSE_URL = clickhouse.url;
        logger.info({ url: clickhouse.url }, 'serving the embedded ClickHouse to the HTTP workers');
      }
      if (!config.REDIS_URL) cache = platform.kernel.engines.cache;
    } else if (!config.REDIS_URL) {
      cache = createMemoryCache();
    }
  } catch (error) {
    await stopOwn();
    throw error;
  }

  // a worker's GET /metrics reports the whole group, this primary's own work included
  serveClusterMetrics();
  const cluster = startHttpCluster({
    workers: config.HTTP_WORKERS,
    logger,
    env,
    cache,
    graceMs: config.SHUTDOWN_GRACE_MS,
    onFailure: options.onFailure,
  });
  void cluster.ready.then(
    () => logger.info({ role, workers: config.HTTP_WORKERS, workerPids: cluster.pids() }, 'platform ready'),
    () => undefined,
  );
  return {
    cluster,
    stop: async () => {
      logger.info('draining the HTTP workers');
      await cluster.stop();
      await stopOwn();
    },
  };
};
