import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { CurrentSchema, RegisteredSchemaRow, TopicEntry } from '../../domain/events/catalog';
import { catalogOf, currentSchemaOf, lookupTopic, moduleTopicEntry } from '../../domain/events/catalog';
import type { LagLevel } from '../../domain/events/lag';
import type { DlqRecord, BusSubscriptionRecord } from '../../domain/events/views';
import type { ModuleRecord } from '../../domain/modules/views';
import type { Queryable } from '../../infra/postgres/db';
import { allManifests, findModule } from '../modules/queries';

/**
 * Typed reads of the bus's read models and queues, for the read API and for the bus's commands
 * (commands/events/lookups.ts re-exports what its callers read); every tenant's query filters by its tenant.
 */

export const SUB_COLUMNS =
  'tenant_id, id, topic, consumer_group, handler_name, source, delivery, dedup, status, created_at, deleted_at';

/** a subscription of the tenant; with source, only that module's */
export const findSubscription = async (
  q: Queryable,
  tenantId: string,
  id: string,
  source?: string,
): Promise<BusSubscriptionRecord | null> =>
  (
    await q.query<BusSubscriptionRecord>(
      `SELECT ${SUB_COLUMNS} FROM rm.events_subscriptions WHERE tenant_id = $1 AND id = $2 AND ($3::text IS NULL OR source = $3)`,
      [tenantId, id, source ?? null],
    )
  ).rows[0] ?? null;

export const listSubscriptions = async (
  q: Queryable,
  tenantId: string,
  f: { source?: string; topic?: string; afterId?: string; limit: number },
): Promise<BusSubscriptionRecord[]> =>
  (
    await q.query<BusSubscriptionRecord>(
      `SELECT ${SUB_COLUMNS} FROM rm.events_subscriptions
     WHERE tenant_id = $1 AND status = 'active' AND ($2::text IS NULL OR source = $2) AND ($3::text IS NULL OR topic = $3) AND id > $4 ORDER BY id LIMIT $5`,
      [tenantId, f.source ?? null, f.topic ?? null, f.afterId ?? '', f.limit],
    )
  ).rows;

/** every topic, by name */
export const topicCatalog = async (q: Queryable): Promise<TopicEntry[]> => catalogOf(await allManifests(q));

/** `known`: a module record the caller already read (a module publishing on its own topic is not read twice) */
export const findTopic = async (
  q: Queryable,
  topic: string,
  known: ModuleRecord | null = null,
): Promise<TopicEntry | null> => {
  const found = lookupTopic(topic);
  if (!found) return null;
  if ('entry' in found) return found.entry;
  const module = known?.slug === found.moduleSlug ? known : await findModule(q, found.moduleSlug);
  return module && module.slug === found.moduleSlug ? moduleTopicEntry(module) : null;
};

/** the last schema registered for the topic, if any */
export const registeredSchema = async (q: Queryable, topic: string): Promise<RegisteredSchemaRow | null> =>
  (
    await q.query<RegisteredSchemaRow>(
      'SELECT schema_version, proto_definition, policy, registered_at FROM rm.events_topic_schemas WHERE tenant_id = $1 AND topic = $2',
      [PLATFORM_TENANT_ID, topic],
    )
  ).rows[0] ?? null;

/** the topic's current schema: the last registered, else the module manifest's, else the envelope (1.0.0) */
export const currentSchema = async (q: Queryable, entry: TopicEntry): Promise<CurrentSchema> =>
  currentSchemaOf(entry, await registeredSchema(q, entry.topic));

export const DLQ_COLUMNS = `id, tenant_id, subscription_id, consumer_group, handler_name, source, topic, partition, seq, event_id, type, payload, event, failure_count, last_error,
  status, due_at, created_at, updated_at, resolved_at`;

/** the tenant's dead letters, newest first; with source, only those of that module's subscriptions */
export const listDlq = async (
  q: Queryable,
  tenantId: string,
  f: { source?: string; topic?: string; status?: string; after?: { at: string; id: string }; limit: number },
): Promise<DlqRecord[]> =>
  (
    await q.query<DlqRecord>(
      `SELECT ${DLQ_COLUMNS} FROM events.dlq
     WHERE tenant_id = $1 AND ($2::text IS NULL OR source = $2) AND ($3::text IS NULL OR topic = $3) AND ($4::text IS NULL OR status = $4)
       AND ($5::timestamptz IS NULL OR (created_at, id) < ($5::timestamptz, $6::uuid))
     ORDER BY created_at DESC, id DESC LIMIT $7`,
      [
        tenantId,
        f.source ?? null,
        f.topic ?? null,
        f.status ?? null,
        f.after?.at ?? null,
        f.after?.id ?? null,
        f.limit,
      ],
    )
  ).rows;

export const findDlq = async (q: Queryable, tenantId: string, id: string, source?: string): Promise<DlqRecord | null> =>
  (
    await q.query<DlqRecord>(
      `SELECT ${DLQ_COLUMNS} FROM events.dlq WHERE tenant_id = $1 AND id = $2 AND ($3::text IS NULL OR source = $3)`,
      [tenantId, id, source ?? null],
    )
  ).rows[0] ?? null;

export interface TaskRow {
  id: string;
  type: string;
  payload: Record<string, unknown>;
  status: 'queued' | 'running' | 'done' | 'failed';
  attempts: number;
  max_attempts: number;
  run_at: Date;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}
const TASK_COLUMNS =
  'id, type, payload, status, attempts, max_attempts, run_at, last_error, created_at, updated_at, completed_at';
export const taskOf = (r: TaskRow) => ({
  id: r.id,
  type: r.type,
  payload: r.payload,
  status: r.status,
  attempts: r.attempts,
  maxAttempts: r.max_attempts,
  runAt: r.run_at.toISOString(),
  lastError: r.last_error,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
  completedAt: r.completed_at?.toISOString() ?? null,
});

export const listTasks = async (
  q: Queryable,
  tenantId: string,
  f: { status?: string; type?: string; after?: { at: string; id: string }; limit: number },
): Promise<TaskRow[]> =>
  (
    await q.query<TaskRow>(
      `SELECT ${TASK_COLUMNS} FROM events.tasks
     WHERE tenant_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR type = $3)
       AND ($4::timestamptz IS NULL OR (created_at, id) < ($4::timestamptz, $5::uuid))
     ORDER BY created_at DESC, id DESC LIMIT $6`,
      [tenantId, f.status ?? null, f.type ?? null, f.after?.at ?? null, f.after?.id ?? null, f.limit],
    )
  ).rows;

export const findTask = async (q: Queryable, tenantId: string, id: string): Promise<TaskRow | null> =>
  (await q.query<TaskRow>(`SELECT ${TASK_COLUMNS} FROM events.tasks WHERE tenant_id = $1 AND id = $2`, [tenantId, id]))
    .rows[0] ?? null;

/**
 * Where the subscription stands (spec 002, Position response). On a topic tenants share, a
 * tenant's offsets count its own events only: currentOffset is how many of the tenant's events on
 * the partition the subscription has passed, logEndOffset how many there are, lag the difference —
 * nothing about other tenants' traffic shows.
 */
const OK: LagLevel = 'ok';

export const positionOf = async (q: Queryable, now: Date, sub: BusSubscriptionRecord) => {
  const { rows } = await q.query<{ partition: number; next_seq: string; head: string | null }>(
    `SELECT c.partition, c.next_seq, h.next_seq AS head FROM events.cursors c
       LEFT JOIN events.tenant_heads h ON h.topic = c.topic AND h.tenant_id = c.tenant_id AND h.partition = c.partition
      WHERE c.subscription_id = $1 ORDER BY c.partition`,
    [sub.id],
  );
  const partitions = rows.map((r) => {
    const logEndOffset = Number(r.head ?? 0);
    const currentOffset = Math.min(Number(r.next_seq), logEndOffset);
    return { partition: r.partition, currentOffset, logEndOffset, lag: Math.max(0, logEndOffset - currentOffset) };
  });
  const { rows: oldest } = await q.query<{ ts: Date | null; level: LagLevel | null }>(
    `SELECT (SELECT min(r.ts) FROM events.cursors c JOIN events.records r ON r.topic = c.topic AND r.tenant_id = c.tenant_id AND r.partition = c.partition AND r.seq = c.next_seq
              WHERE c.subscription_id = $1) AS ts,
            (SELECT level FROM events.lag_alerts WHERE subscription_id = $1) AS level`,
    [sub.id],
  );
  const ts = oldest[0]?.ts ?? null;
  return {
    subscriptionId: sub.id,
    topic: sub.topic,
    consumerGroup: sub.consumer_group,
    partitions,
    totalLag: partitions.reduce((n, p) => n + p.lag, 0),
    lagSeconds: ts ? Math.max(0, Math.floor((now.getTime() - ts.getTime()) / 1000)) : 0,
    alertLevel: oldest[0]?.level ?? OK,
  };
};
