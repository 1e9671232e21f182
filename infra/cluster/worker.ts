import cluster from 'node:cluster';

/**
 * The worker's side of an HTTP cluster (infra/cluster/primary.ts): which worker this process is,
 * and the messages it exchanges with its primary over the cluster's IPC channel.
 */

/** the environment variable the primary names each worker's index in (0, 1, …; a restarted worker keeps its index) */
export const WORKER_INDEX_ENV = 'PLATFORM_HTTP_WORKER';

export const MESSAGES = {
  /** worker → primary: it started and wants to know whether the primary is ready */
  hello: 'platform.cluster.hello',
  /** primary → worker: { ready } — the primary's readiness, sent on hello and when it changes */
  primary: 'platform.cluster.primary',
  /** worker → primary: it serves (its own /ready is true) */
  ready: 'platform.cluster.ready',
  /** primary → worker: drain and exit 0 */
  shutdown: 'platform.cluster.shutdown',
} as const;

export interface ClusterMessage {
  kind: (typeof MESSAGES)[keyof typeof MESSAGES];
  ready?: boolean;
}

export const isClusterMessage = (m: unknown): m is ClusterMessage =>
  typeof m === 'object' && m !== null && Object.values(MESSAGES).includes((m as ClusterMessage).kind);

/** this process's index among its cluster's HTTP workers, or null when it is no cluster worker */
export const httpWorkerIndex = (): number | null => {
  if (!cluster.isWorker) return null;
  const index = Number(process.env[WORKER_INDEX_ENV]);
  return Number.isInteger(index) && index >= 0 ? index : null;
};

/**
 * Whether this process serves what binds once per deployment beside its HTTP port (billing's gRPC
 * server): the process outside a cluster, or worker 0 of a cluster (docs/decisions.md)
 */
export const servesSingletons = (): boolean => (httpWorkerIndex() ?? 0) === 0;

/**
 * Joins the primary: readiness as the primary reports it, and its order to drain. Returns the
 * function that tells the primary this worker serves. Outside a cluster it does nothing.
 */
export const joinCluster = (handlers: {
  primaryReady: (ready: boolean) => void;
  shutdown: () => void;
  /** the channel closed without an order: the primary died */
  primaryGone: () => void;
}): { serving: () => void } => {
  if (!cluster.isWorker || !process.send) return { serving: () => undefined };
  let ordered = false;
  process.on('message', (message: unknown) => {
    if (!isClusterMessage(message)) return;
    if (message.kind === MESSAGES.primary) handlers.primaryReady(message.ready === true);
    if (message.kind === MESSAGES.shutdown) {
      ordered = true;
      handlers.shutdown();
    }
  });
  process.on('disconnect', () => {
    if (!ordered) handlers.primaryGone();
  });
  process.send({ kind: MESSAGES.hello } satisfies ClusterMessage);
  return { serving: () => process.send?.({ kind: MESSAGES.ready } satisfies ClusterMessage) };
};
