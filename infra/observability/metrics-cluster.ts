import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry } from 'prom-client';
import { localMetricsJson, metricsRegistry } from './metrics';

/** one process's metrics as prom-client's JSON */
type ProcessMetrics = Awaited<ReturnType<typeof localMetricsJson>>;

/**
 * One scrape reports the whole process group of an HTTP cluster (node:cluster, app/cluster.ts):
 * the HTTP worker that receives GET /metrics asks its primary over the cluster's IPC channel; the
 * primary collects its own metrics (for `platform start`: the relay, projectors and background
 * workers it runs) and every live worker's, sums them with prom-client's AggregatorRegistry
 * (counters and histograms add up; the gauges of pools add up to the group's; the figures computed
 * at scrape time come from the one process that runs the work) and answers the text. Outside a
 * cluster a scrape is the process's own registry. A worker that does not answer within
 * COLLECT_TIMEOUT_MS is left out of that scrape rather than failing it.
 */
const KIND = {
  /** worker → primary: { id } — a scrape arrived */
  scrape: 'platform.metrics.scrape',
  /** primary → worker: { id } — send your metrics */
  collect: 'platform.metrics.collect',
  /** worker → primary: { id, metrics } */
  local: 'platform.metrics.local',
  /** primary → worker: { id, text } or { id, error } */
  text: 'platform.metrics.text',
} as const;

interface MetricsMessage {
  kind: (typeof KIND)[keyof typeof KIND];
  id: number;
  metrics?: ProcessMetrics;
  text?: string;
  error?: string;
}

const COLLECT_TIMEOUT_MS = 3_000;
const ANSWER_TIMEOUT_MS = 8_000;

const isMetricsMessage = (m: unknown): m is MetricsMessage =>
  typeof m === 'object' && m !== null && Object.values(KIND).includes((m as MetricsMessage).kind);

export const METRICS_CONTENT_TYPE = metricsRegistry.contentType;

let nextId = 0;
const answers = new Map<number, (m: MetricsMessage) => void>();
let primaryServes = false;

/** the text of a scrape: the process group's in a cluster worker (or its primary), this process's otherwise */
export const scrapeMetrics = async (): Promise<string> => {
  if (cluster.isWorker && process.send) return askPrimary();
  if (primaryServes) return collectGroup();
  return metricsRegistry.metrics();
};

const askPrimary = (): Promise<string> =>
  new Promise<string>((resolve, reject) => {
    const id = ++nextId;
    const timer = setTimeout(() => {
      answers.delete(id);
      reject(new Error('the cluster primary did not answer the metrics scrape'));
    }, ANSWER_TIMEOUT_MS);
    answers.set(id, (m) => {
      clearTimeout(timer);
      answers.delete(id);
      if (m.text !== undefined) resolve(m.text);
      else reject(new Error(m.error ?? 'the cluster primary could not collect the metrics'));
    });
    process.send!({ kind: KIND.scrape, id } satisfies MetricsMessage);
  });

// a cluster worker answers its primary's collections from the start, whether or not it is ever scraped
if (cluster.isWorker) {
  process.on('message', (m: unknown) => {
    if (!isMetricsMessage(m)) return;
    if (m.kind === KIND.text) answers.get(m.id)?.(m);
    if (m.kind === KIND.collect)
      void localMetricsJson().then(
        (metrics) => process.send?.({ kind: KIND.local, id: m.id, metrics } satisfies MetricsMessage),
        () => process.send?.({ kind: KIND.local, id: m.id, metrics: [] } satisfies MetricsMessage),
      );
  });
}

const collections = new Map<number, { got: ProcessMetrics[]; waiting: number; done: () => void }>();

/** the primary's metrics and every live worker's, aggregated */
const collectGroup = async (): Promise<string> => {
  const id = ++nextId;
  const got: ProcessMetrics[] = [await localMetricsJson()];
  const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => !!w && w.isConnected());
  if (workers.length > 0)
    await new Promise<void>((resolve) => {
      const timer = setTimeout(finish, COLLECT_TIMEOUT_MS);
      function finish() {
        clearTimeout(timer);
        collections.delete(id);
        resolve();
      }
      collections.set(id, { got, waiting: workers.length, done: finish });
      for (const w of workers) w.send({ kind: KIND.collect, id } satisfies MetricsMessage);
    });
  return AggregatorRegistry.aggregate(got).metrics();
};

/**
 * The primary of an HTTP cluster answers its workers' scrapes with the group's metrics
 * (app/cluster.ts calls it once, before forking).
 */
export const serveClusterMetrics = (): void => {
  if (primaryServes || !cluster.isPrimary) return;
  primaryServes = true;
  cluster.on('message', (worker: Worker, m: unknown) => {
    if (!isMetricsMessage(m)) return;
    if (m.kind === KIND.local) {
      const c = collections.get(m.id);
      if (!c) return;
      c.got.push(m.metrics ?? []);
      if (--c.waiting === 0) c.done();
    }
    if (m.kind === KIND.scrape) {
      const reply = (answer: Omit<MetricsMessage, 'kind' | 'id'>) => {
        if (worker.isConnected()) worker.send({ kind: KIND.text, id: m.id, ...answer } satisfies MetricsMessage);
      };
      collectGroup().then(
        (text) => reply({ text }),
        (error: unknown) => reply({ error: error instanceof Error ? error.message : String(error) }),
      );
    }
  });
};
