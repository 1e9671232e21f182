import cluster, { type Worker } from 'node:cluster';
import type { KeyValueCache } from '../cache/port';
import type { Logger } from '../observability/logger';
import { serveCache } from './ipc-cache';
import { isClusterMessage, MESSAGES, WORKER_INDEX_ENV, type ClusterMessage } from './worker';

/**
 * The primary of an HTTP cluster (node:cluster; Node 20 has no reusePort): it forks `workers`
 * copies of this very command, each an HTTP worker listening on the one shared port (the primary
 * accepts and hands connections round-robin). The primary serves no request itself; it
 * - serves the one in-process cache to its workers over IPC when there is no Redis
 *   (infra/cluster/ipc-cache.ts), so rate limits, replay markers, locks and epochs stay exact;
 * - starts worker 0 first and the others once it serves, so the start hooks that write (billing's
 *   free plan, the modules' schema keys) run once before the others repeat them, and worker 0
 *   serves what binds once (servesSingletons: billing's gRPC);
 * - restarts a worker that dies after it served (logged), with its index; a worker that dies
 *   before it ever served fails the start (`onFailure`), as a single process's failed start would;
 * - stops them all in stop(): each drains (stops accepting, finishes its requests, exits 0),
 *   and one still running after graceMs is killed.
 */
export interface ClusterOptions {
  workers: number;
  logger: Logger;
  /** variables each worker gets on top of the primary's environment */
  env: Record<string, string>;
  /** the cache served to workers over IPC (null: they share Redis) */
  cache: KeyValueCache | null;
  graceMs: number;
  /** a worker failed before it ever served: the cluster cannot start (its exit code, 1 when killed) */
  onFailure: (code: number) => void;
}

export interface HttpCluster {
  /** resolves once every worker serves */
  ready: Promise<void>;
  /** the live workers' process ids (index order) */
  pids(): number[];
  stop(): Promise<void>;
}

const RESTART_DELAY_MS = 1_000;

export const startHttpCluster = (options: ClusterOptions): HttpCluster => {
  const { logger } = options;
  const live = new Map<number, Worker>();
  const served = new Set<number>();
  let stopping = false;
  let primaryReady = true;
  let resolveReady!: () => void;
  let rejectReady!: (e: Error) => void;
  const ready = new Promise<void>((resolve, reject) => {
    resolveReady = resolve;
    rejectReady = reject;
  });
  ready.catch(() => undefined);

  const send = (worker: Worker, message: ClusterMessage) => {
    if (worker.isConnected()) worker.send(message);
  };

  const fork = (index: number, restarted: boolean): Promise<void> =>
    new Promise<void>((resolve) => {
      const worker = cluster.fork({ ...options.env, [WORKER_INDEX_ENV]: String(index) });
      live.set(index, worker);
      const unserve = options.cache ? serveCache(worker, options.cache) : () => undefined;
      let serving = false;
      worker.on('message', (message: unknown) => {
        if (!isClusterMessage(message)) return;
        if (message.kind === MESSAGES.hello) send(worker, { kind: MESSAGES.primary, ready: primaryReady && !stopping });
        if (message.kind === MESSAGES.ready && !serving) {
          serving = true;
          served.add(index);
          logger.info({ worker: index, workerPid: worker.process.pid, restarted }, 'HTTP worker serving');
          resolve();
        }
      });
      worker.on('exit', (code, signal) => {
        unserve();
        if (live.get(index) === worker) live.delete(index);
        if (stopping) return;
        if (!serving && !restarted) {
          logger.error({ worker: index, code, signal }, 'an HTTP worker failed to start');
          rejectReady(new Error(`HTTP worker ${index} exited (${code ?? signal}) before it served`));
          options.onFailure(code || 1);
          return;
        }
        // a restarted worker that fails again is retried too: the cluster keeps its other workers serving
        logger.error(
          { worker: index, workerPid: worker.process.pid, code, signal },
          'an HTTP worker died unexpectedly; starting another',
        );
        setTimeout(() => {
          if (!stopping) void fork(index, true);
        }, RESTART_DELAY_MS).unref();
      });
    });

  void (async () => {
    await fork(0, false);
    await Promise.all(Array.from({ length: options.workers - 1 }, (_, i) => fork(i + 1, false)));
    resolveReady();
  })();

  return {
    ready,
    pids: () =>
      [...live.entries()]
        .sort(([a], [b]) => a - b)
        .map(([, w]) => w.process.pid)
        .filter((pid): pid is number => pid !== undefined),
    async stop() {
      stopping = true;
      primaryReady = false;
      const workers = [...live.values()];
      await Promise.all(
        workers.map(
          (worker) =>
            new Promise<void>((resolve) => {
              if (worker.isDead()) return resolve();
              const killer = setTimeout(() => {
                logger.warn({ workerPid: worker.process.pid }, 'an HTTP worker did not drain in time; killing it');
                worker.process.kill('SIGKILL');
              }, options.graceMs + 1_000);
              worker.once('exit', () => {
                clearTimeout(killer);
                resolve();
              });
              send(worker, { kind: MESSAGES.shutdown });
            }),
        ),
      );
    },
  };
};
