import type { Kernel } from '../infra/kernel';
import type { ScrapeSample } from '../infra/observability/metrics';
import { addScrapeSource } from '../infra/observability/metrics';
import type { Queryable } from '../infra/postgres/db';

/**
 * The figures of the background work, computed when Prometheus scrapes (a few cheap statements,
 * never on a request's path), by the process that runs that work — so that a split deployment
 * reports each once: the relays' backlog, the durable queues and the bus where the relay and the
 * context workers run (role all, workers), each async projection's lag where it is projected
 * (role all, workers, projector). Counts over a long backlog stop at COUNT_CAP rows.
 */
const COUNT_CAP = 100_000;

/** the part of a row comparison that keeps a reader to committed events in causal order (DESIGN.md mechanism 1) */
const AFTER = (x: string, p: string) =>
  `(e.transaction_id, e.position) > (${x}, ${p}) AND e.transaction_id < pg_snapshot_xmin(pg_current_snapshot())`;
const AGE = (column: string) => `COALESCE(greatest(0, extract(epoch FROM now() - ${column})), 0)::float8`;

const PROJECTION_LAG = `SELECT p.name,
    (SELECT count(*) FROM (SELECT 1 FROM es.events e WHERE ${AFTER('c.transaction_id', 'c.position')} LIMIT ${COUNT_CAP}) b)::int AS events,
    ${AGE(`(SELECT e.occurred_at FROM es.events e WHERE ${AFTER('c.transaction_id', 'c.position')} ORDER BY e.transaction_id, e.position LIMIT 1)`)} AS seconds
  FROM es.projections p JOIN es.checkpoints c ON c.name = 'projection:' || p.name || ':g' || p.active_generation
  WHERE p.mode = 'async' AND p.name = ANY($1::text[])`;

/** the outbox relay's checkpoint (workers/outbox-relay.ts, its default name), the bus's outbox and the audit outbox */
const RELAY_BACKLOG = `WITH c AS (
    SELECT COALESCE(max(transaction_id::text), '0')::xid8 AS x, COALESCE(max(position), 0) AS p FROM es.checkpoints WHERE name = 'outbox-relay')
  SELECT 'outbox-relay' AS source,
    (SELECT count(*) FROM (SELECT 1 FROM es.events e, c WHERE ${AFTER('c.x', 'c.p')} LIMIT ${COUNT_CAP}) b)::int AS items,
    ${AGE(`(SELECT e.occurred_at FROM es.events e, c WHERE ${AFTER('c.x', 'c.p')} ORDER BY e.transaction_id, e.position LIMIT 1)`)} AS seconds
  UNION ALL SELECT 'events-relay', count(*)::int, ${AGE('min(ts)')} FROM events.outbox
  UNION ALL SELECT 'audit.outbox-relay', count(*)::int, ${AGE('min(created_at)')} FROM audit.outbox`;

/** the unfinished items of each durable queue (infra/queue.ts users) */
const QUEUES: readonly { queue: string; from: string; created: string }[] = [
  { queue: 'notify.deliveries', from: "notify.deliveries WHERE state IN ('queued', 'sending')", created: 'created_at' },
  { queue: 'files.tasks', from: 'files.tasks', created: 'created_at' },
  { queue: 'events.tasks', from: "events.tasks WHERE status IN ('queued', 'running')", created: 'created_at' },
  { queue: 'events.dlq', from: "events.dlq WHERE status IN ('pending', 'retrying')", created: 'created_at' },
  {
    queue: 'audit.export_jobs',
    from: "audit.export_jobs WHERE status IN ('queued', 'running')",
    created: 'created_at',
  },
  { queue: 'billing.notices', from: "billing.notices WHERE status = 'pending'", created: 'created_at' },
  { queue: 'billing.webhook_events', from: "billing.webhook_events WHERE status = 'pending'", created: 'received_at' },
];
const QUEUE_DEPTH = QUEUES.map(
  (q) => `SELECT '${q.queue}' AS queue, count(*)::int AS depth, ${AGE(`min(${q.created})`)} AS seconds FROM ${q.from}`,
).join('\n  UNION ALL ');

/** the bus's dead letters waiting for an operator or a redrive */
const DEAD_LETTERS = `SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending,
    count(*) FILTER (WHERE status = 'retrying')::int AS retrying
  FROM events.dlq WHERE status IN ('pending', 'retrying')`;

/** the spec's consumer lag (commands/events/lag.ts), the largest over the active subscriptions (the events service's) */
const CONSUMER_LAG = `SELECT ${AGE('min(o.oldest)')} AS lag
  FROM (SELECT (SELECT min(r.ts) FROM events.cursors c JOIN events.records r
                  ON r.topic = c.topic AND r.tenant_id = c.tenant_id AND r.partition = c.partition AND r.seq = c.next_seq
                 WHERE c.subscription_id = s.id::uuid AND r.log_offset >= c.min_log_offset) AS oldest
          FROM rm.events_subscriptions s WHERE s.status = 'active') o`;

/** a statement's samples; one that fails (a context's tables absent) leaves its figures out of that scrape */
const sampled = async <R extends object>(
  db: Queryable,
  sql: string,
  values: unknown[],
  toSamples: (row: R) => ScrapeSample[],
): Promise<ScrapeSample[]> => {
  try {
    const { rows } = await db.query<R>(sql, values);
    return rows.flatMap(toSamples);
  } catch {
    return [];
  }
};

export const projectionLagSamples = (db: Queryable, names: readonly string[]) =>
  sampled<{ name: string; events: number; seconds: number }>(db, PROJECTION_LAG, [names], (r) => [
    { name: 'platform_projection_lag_events', labels: { projection: r.name }, value: r.events },
    { name: 'platform_projection_lag_seconds', labels: { projection: r.name }, value: r.seconds },
  ]);

export const relayBacklogSamples = (db: Queryable) =>
  sampled<{ source: string; items: number; seconds: number }>(db, RELAY_BACKLOG, [], (r) => [
    { name: 'platform_relay_backlog_records', labels: { source: r.source }, value: r.items },
    { name: 'platform_relay_oldest_unpublished_age_seconds', labels: { source: r.source }, value: r.seconds },
  ]);

export const queueSamples = (db: Queryable) =>
  sampled<{ queue: string; depth: number; seconds: number }>(db, QUEUE_DEPTH, [], (r) => [
    { name: 'platform_queue_depth', labels: { queue: r.queue }, value: r.depth },
    { name: 'platform_queue_oldest_age_seconds', labels: { queue: r.queue }, value: r.seconds },
  ]);

export const busSamples = async (db: Queryable) => [
  ...(await sampled<{ lag: number }>(db, CONSUMER_LAG, [], (r) => [
    { name: 'platform_bus_consumer_lag_seconds', value: r.lag },
  ])),
  ...(await sampled<{ pending: number; retrying: number }>(db, DEAD_LETTERS, [], (r) => [
    { name: 'platform_bus_dead_letters', labels: { status: 'pending' }, value: r.pending },
    { name: 'platform_bus_dead_letters', labels: { status: 'retrying' }, value: r.retrying },
  ])),
];

/**
 * Reports the background figures of this process's work at every scrape until stopped.
 * `projections`: the async projections it runs (null: every async projection).
 */
export const startBackgroundMetrics = (
  kernel: Kernel,
  options: { relays: boolean; projections: readonly string[] | null },
): { stop(): Promise<void> } => {
  const names =
    options.projections ?? kernel.projections.projections.filter((p) => p.mode === 'async').map((p) => p.name);
  const remove = addScrapeSource(async () =>
    (
      await Promise.all([
        projectionLagSamples(kernel.db, names),
        ...(options.relays ? [relayBacklogSamples(kernel.db), queueSamples(kernel.db), busSamples(kernel.db)] : []),
      ])
    ).flat(),
  );
  return {
    stop: async () => {
      remove();
    },
  };
};
