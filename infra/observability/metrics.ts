import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The process's Prometheus metrics (README "Metrics"): one registry per process, the prom-client
 * default process metrics, and the platform's figures, each recorded at its one choke point (the
 * HTTP host, the group commit, the event store's append, the relay core, the billing client, the
 * rate limiter, the pool) or computed at scrape time by the process that runs the work
 * (workers/metrics.ts). Names follow Prometheus's conventions under `platform_`, base units,
 * `_total` counters; labels stay few (route templates, never raw URLs or tenant ids).
 * GET /metrics serves them (infra/observability/metrics-route.ts); a cluster's scrape reports every
 * process of the group (infra/observability/metrics-cluster.ts).
 */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

const registers = [metricsRegistry];
/** latency buckets, seconds: 1 ms to 10 s */
const LATENCY = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

// --- HTTP: a histogram kept in plain arrays, so a request costs two map lookups and three additions ---

const HTTP_NAME = 'platform_http_request_duration_seconds';
const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const;
const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** the route label of a request no route matched (404, 405 and refusals before routing) */
export const UNMATCHED_ROUTE = 'unmatched';

interface Series {
  /** per status class: cumulative-free bucket counts (the last is +Inf), then the sum and the count */
  buckets: Float64Array[];
  sums: Float64Array;
  counts: Float64Array;
}

const httpSeries = new Map<string, Map<string, Series>>();

const seriesOf = (route: string, method: string): Series => {
  let byMethod = httpSeries.get(route);
  if (!byMethod) httpSeries.set(route, (byMethod = new Map<string, Series>()));
  let series = byMethod.get(method);
  if (!series) {
    series = {
      buckets: STATUS_CLASSES.map(() => new Float64Array(LATENCY.length + 1)),
      sums: new Float64Array(STATUS_CLASSES.length),
      counts: new Float64Array(STATUS_CLASSES.length),
    };
    byMethod.set(method, series);
  }
  return series;
};

/** counts one answered request: its method, route template (or UNMATCHED_ROUTE), status and time in milliseconds */
export const observeHttpRequest = (method: string, route: string | undefined, status: number, ms: number): void => {
  const series = seriesOf(route || UNMATCHED_ROUTE, HTTP_METHODS.has(method) ? method : 'OTHER');
  const cls = Math.min(4, Math.max(0, Math.floor(status / 100) - 1));
  const seconds = ms / 1000;
  let i = 0;
  while (i < LATENCY.length && seconds > LATENCY[i]!) i++;
  series.buckets[cls]![i]! += 1;
  series.sums[cls]! += seconds;
  series.counts[cls]! += 1;
};

interface Sample {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

// registered as prom-client registers its own metrics: an object with get() (what the cluster aggregation reads too)
const HTTP_HELP = 'HTTP requests answered, by method, route template and status class, and their time to answer';
metricsRegistry.registerMetric({
  name: HTTP_NAME,
  help: HTTP_HELP,
  type: 'histogram',
  aggregator: 'sum',
  get: () => {
    const values: Sample[] = [];
    for (const [route, byMethod] of httpSeries) {
      for (const [method, series] of byMethod) {
        STATUS_CLASSES.forEach((statusClass, cls) => {
          const count = series.counts[cls]!;
          if (count === 0) return;
          const labels = { method, route, status_class: statusClass };
          let cumulative = 0;
          series.buckets[cls]!.forEach((n, b) => {
            cumulative += n;
            const le = b < LATENCY.length ? LATENCY[b]! : '+Inf';
            values.push({ metricName: `${HTTP_NAME}_bucket`, labels: { ...labels, le }, value: cumulative });
          });
          values.push({ metricName: `${HTTP_NAME}_sum`, labels, value: series.sums[cls]! });
          values.push({ metricName: `${HTTP_NAME}_count`, labels, value: count });
        });
      }
    }
    return { name: HTTP_NAME, help: HTTP_HELP, type: 'histogram', values, aggregator: 'sum' };
  },
} as unknown as Parameters<Registry['registerMetric']>[0]);

// --- the event store and the group commit ---

export const appendDuration = new Histogram({
  name: 'platform_eventstore_append_duration_seconds',
  help: "Time of one append to the event store: a command batch's write and COMMIT round trip (path batch), or one append statement inside a transaction (path transaction)",
  labelNames: ['path'] as const,
  buckets: LATENCY,
  registers,
});
export const appendedEvents = new Counter({
  name: 'platform_eventstore_appended_events_total',
  help: 'Events appended to the event store, by path (batch, transaction)',
  labelNames: ['path'] as const,
  registers,
});
const appendBatch = { duration: appendDuration.labels('batch'), events: appendedEvents.labels('batch') };
const appendInTransaction = {
  duration: appendDuration.labels('transaction'),
  events: appendedEvents.labels('transaction'),
};
/** records one append: its path, the events it wrote and when it started (performance.now()) */
export const observeAppend = (path: 'batch' | 'transaction', events: number, startedAt: number): void => {
  const m = path === 'batch' ? appendBatch : appendInTransaction;
  m.duration.observe((performance.now() - startedAt) / 1000);
  m.events.inc(events);
};

export const groupCommitDuration = new Histogram({
  name: 'platform_group_commit_batch_duration_seconds',
  help: "Time of one group-commit batch's transaction (connection, statements, COMMIT), by batcher",
  labelNames: ['batcher'] as const,
  buckets: LATENCY,
  registers,
});
export const groupCommitItems = new Histogram({
  name: 'platform_group_commit_batch_items',
  help: 'Items (commands, staged publishes, creates) per group-commit batch, by batcher',
  labelNames: ['batcher'] as const,
  buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
  registers,
});
export const groupCommitFailures = new Counter({
  name: 'platform_group_commit_failed_batches_total',
  help: 'Group-commit batches rolled back (their items then ran alone), by batcher',
  labelNames: ['batcher'] as const,
  registers,
});

// --- the relay core ---

export const relayPublished = new Counter({
  name: 'platform_relay_published_records_total',
  help: 'Records a relay published to the log, by source (outbox-relay, events-relay, audit.outbox-relay)',
  labelNames: ['source'] as const,
  registers,
});
export const relayBatchDuration = new Histogram({
  name: 'platform_relay_batch_duration_seconds',
  help: 'Time to publish one relay batch to the log and mark it done, by source',
  labelNames: ['source'] as const,
  buckets: LATENCY,
  registers,
});
export const relayFailures = new Counter({
  name: 'platform_relay_failures_total',
  help: 'Relay turns that failed (the same batch is published again), by source',
  labelNames: ['source'] as const,
  registers,
});

// --- the edge and billing ---

export const rateLimitRefusals = new Counter({
  name: 'platform_rate_limit_refusals_total',
  help: 'Requests refused with 429 by the rate limits, by the layer that decided (global: the shared window, local: the instance fallback) and caller kind',
  labelNames: ['layer', 'caller'] as const,
  registers,
});

export const checkLimitDuration = new Histogram({
  name: 'platform_billing_check_limit_duration_seconds',
  help: "Time of billing's CheckLimit gRPC call, by outcome (allowed, refused, error)",
  labelNames: ['outcome'] as const,
  buckets: LATENCY,
  registers,
});

// --- the bus ---

export const busDeadLetters = new Counter({
  name: 'platform_bus_dead_letters_total',
  help: 'Events the bus dead-lettered (events.dlq) after their last delivery attempt',
  registers,
});

// --- the database pool ---

interface PoolLike {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
  options: { max?: number };
  connect: (...args: never[]) => unknown;
}
const pools = new Set<PoolLike>();
const poolGauge = (name: string, help: string, of: (p: PoolLike) => number) =>
  new Gauge({
    name,
    help,
    registers,
    collect() {
      let sum = 0;
      for (const pool of pools) sum += of(pool);
      this.set(sum);
    },
  });
poolGauge(
  'platform_db_pool_connections',
  'Connections the PostgreSQL pool holds (in use and idle)',
  (p) => p.totalCount,
);
poolGauge('platform_db_pool_idle_connections', 'Idle connections of the PostgreSQL pool', (p) => p.idleCount);
poolGauge(
  'platform_db_pool_waiting_requests',
  'Requests for a connection waiting because the PostgreSQL pool is exhausted',
  (p) => p.waitingCount,
);
poolGauge('platform_db_pool_max_connections', 'The size limit of the PostgreSQL pool (DATABASE_POOL_SIZE)', (p) =>
  Number(p.options.max ?? 0),
);
export const poolAcquireDuration = new Histogram({
  name: 'platform_db_pool_acquire_duration_seconds',
  help: 'Time a request for a PostgreSQL pool connection waited until it got one (or failed)',
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers,
});

/**
 * Reports a pg pool: its counts at scrape time, and the wait of every checkout (pool.query checks
 * out through connect too). Returns the function that stops reporting it (the pool's end).
 */
export const trackPool = (pool: PoolLike): (() => void) => {
  pools.add(pool);
  const connect = pool.connect.bind(pool) as (cb?: (...a: unknown[]) => void) => unknown;
  const timed = (cb?: (...a: unknown[]) => void): unknown => {
    const start = performance.now();
    const observe = () => poolAcquireDuration.observe((performance.now() - start) / 1000);
    if (cb)
      return connect((...a: unknown[]) => {
        observe();
        cb(...a);
      });
    return (connect() as Promise<unknown>).then(
      (client) => {
        observe();
        return client;
      },
      (error: unknown) => {
        observe();
        throw error;
      },
    );
  };
  pool.connect = timed;
  return () => pools.delete(pool);
};

// --- figures computed at scrape time (gauges the process that runs the work fills) ---

export interface ScrapeSample {
  /** a gauge of SCRAPE_GAUGES */
  name: ScrapeGauge;
  labels?: Record<string, string>;
  value: number;
}

/** the gauges a scrape computes with cheap queries (workers/metrics.ts), with their label names */
export const SCRAPE_GAUGES = {
  platform_relay_backlog_records: {
    help: 'Records committed and not yet published by a relay, by source (the event store counts up to 100000)',
    labels: ['source'],
  },
  platform_relay_oldest_unpublished_age_seconds: {
    help: 'Age of the oldest record a relay has not published yet (0 when caught up), by source',
    labels: ['source'],
  },
  platform_projection_lag_events: {
    help: "Events of the global log after an async projection's checkpoint (counted up to 100000), by projection",
    labels: ['projection'],
  },
  platform_projection_lag_seconds: {
    help: 'Age of the oldest event an async projection has not applied (0 when caught up), by projection',
    labels: ['projection'],
  },
  platform_queue_depth: {
    help: 'Items of a durable work queue not yet finished (due, scheduled or running), by queue',
    labels: ['queue'],
  },
  platform_queue_oldest_age_seconds: {
    help: 'Age of the oldest unfinished item of a durable work queue (0 when empty), by queue',
    labels: ['queue'],
  },
  platform_bus_consumer_lag_seconds: {
    help: 'Age of the oldest event an active bus subscription has not processed, the largest over every subscription',
    labels: [],
  },
  platform_bus_dead_letters: {
    help: 'Dead letters of the bus (events.dlq) by status (pending, retrying)',
    labels: ['status'],
  },
} as const;
export type ScrapeGauge = keyof typeof SCRAPE_GAUGES;

type ScrapeSource = () => Promise<ScrapeSample[]>;
const scrapeSources = new Set<ScrapeSource>();
let scraped: Promise<ScrapeSample[]> | null = null;

/** the samples of every source, computed once per scrape (each gauge's collect shares one round) */
const scrapeRound = (): Promise<ScrapeSample[]> => {
  scraped ??= Promise.all([...scrapeSources].map((source) => source().catch((): ScrapeSample[] => []))).then((all) =>
    all.flat(),
  );
  const round = scraped;
  // the next scrape starts a round of its own
  void round.finally(() =>
    setImmediate(() => {
      if (scraped === round) scraped = null;
    }),
  );
  return round;
};

for (const [name, spec] of Object.entries(SCRAPE_GAUGES) as [ScrapeGauge, (typeof SCRAPE_GAUGES)[ScrapeGauge]][]) {
  new Gauge({
    name,
    help: spec.help,
    labelNames: spec.labels,
    registers,
    async collect() {
      this.reset();
      for (const s of await scrapeRound()) if (s.name === name) this.set(s.labels ?? {}, s.value);
    },
  });
}

/** adds figures computed at scrape time; returns the function that removes them (the work stopped) */
export const addScrapeSource = (source: ScrapeSource): (() => void) => {
  scrapeSources.add(source);
  return () => scrapeSources.delete(source);
};

/** this process's metrics as prom-client's JSON (what a cluster's primary aggregates) */
export const localMetricsJson = () => metricsRegistry.getMetricsAsJSON();

/** times one CheckLimit call (gRPC to billing, or in-process) into platform_billing_check_limit_duration_seconds */
export const measureCheckLimit = async <T extends { allowed: boolean }>(call: () => Promise<T>): Promise<T> => {
  const started = performance.now();
  let outcome = 'error';
  try {
    const answer = await call();
    outcome = answer.allowed ? 'allowed' : 'refused';
    return answer;
  } finally {
    checkLimitDuration.observe({ outcome }, (performance.now() - started) / 1000);
  }
};
