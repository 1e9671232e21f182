import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { DlqView, SubscriptionView } from '../../domain/events/views';
import type { Queryable } from '../../infra/postgres/db';

/** typed reads of the bus's read models and queues; every tenant's query filters by its tenant */

export interface SubscriptionRow {
  tenant_id: string; id: string; topic: string; consumer_group: string; handler_name: string; source: string; delivery: 'webhook' | 'in-process';
  dedup: boolean; status: 'active' | 'deleted'; created_at: Date; deleted_at: Date | null;
}
const SUB_COLUMNS = 'tenant_id, id, topic, consumer_group, handler_name, source, delivery, dedup, status, created_at, deleted_at';

export const subscriptionOf = (r: SubscriptionRow): SubscriptionView => ({
  id: r.id, topic: r.topic, consumerGroup: r.consumer_group, handlerName: r.handler_name, source: r.source, delivery: r.delivery, dedup: r.dedup,
  status: r.status, createdAt: r.created_at.toISOString(), deletedAt: r.deleted_at?.toISOString() ?? null,
});

/** a subscription of the tenant; with source, only that module's */
export const findSubscription = async (q: Queryable, tenantId: string, id: string, source?: string): Promise<SubscriptionRow | null> =>
  (await q.query<SubscriptionRow>(`SELECT ${SUB_COLUMNS} FROM rm.events_subscriptions WHERE tenant_id = $1 AND id = $2 AND ($3::text IS NULL OR source = $3)`,
    [tenantId, id, source ?? null])).rows[0] ?? null;

export const activeSubscriptionByGroup = async (q: Queryable, tenantId: string, consumerGroup: string, topic: string): Promise<SubscriptionRow | null> =>
  (await q.query<SubscriptionRow>(`SELECT ${SUB_COLUMNS} FROM rm.events_subscriptions WHERE tenant_id = $1 AND consumer_group = $2 AND topic = $3 AND status = 'active'`,
    [tenantId, consumerGroup, topic])).rows[0] ?? null;

export const listSubscriptions = async (q: Queryable, tenantId: string, f: { source?: string; topic?: string; afterId?: string; limit: number }): Promise<SubscriptionRow[]> =>
  (await q.query<SubscriptionRow>(`SELECT ${SUB_COLUMNS} FROM rm.events_subscriptions
     WHERE tenant_id = $1 AND status = 'active' AND ($2::text IS NULL OR source = $2) AND ($3::text IS NULL OR topic = $3) AND id > $4 ORDER BY id LIMIT $5`,
  [tenantId, f.source ?? null, f.topic ?? null, f.afterId ?? '', f.limit])).rows;

/** a subscription by id across tenants: for the workers, which act for every tenant */
export const subscriptionById = async (q: Queryable, id: string): Promise<SubscriptionRow | null> =>
  (await q.query<SubscriptionRow>(`SELECT ${SUB_COLUMNS} FROM rm.events_subscriptions WHERE id = $1`, [id])).rows[0] ?? null;

/** the topics some active subscription reads (the fan-out consumes these), with the first subscription's time */
export const subscribedTopics = async (q: Queryable): Promise<{ topic: string; since: Date }[]> =>
  (await q.query<{ topic: string; since: Date }>(`SELECT topic, min(created_at) AS since FROM rm.events_subscriptions WHERE status = 'active' GROUP BY topic ORDER BY topic`)).rows;

export interface SchemaRow { topic: string; schema_version: string; proto_definition: string; policy: string; registered_at: Date }
export const registeredSchema = async (q: Queryable, topic: string): Promise<SchemaRow | null> =>
  (await q.query<SchemaRow>('SELECT topic, schema_version, proto_definition, policy, registered_at FROM rm.events_topic_schemas WHERE tenant_id = $1 AND topic = $2',
    [PLATFORM_TENANT_ID, topic])).rows[0] ?? null;
export const schemaVersions = async (q: Queryable, topic: string): Promise<{ schema_version: string; proto_definition: string }[]> =>
  (await q.query<{ schema_version: string; proto_definition: string }>(
    'SELECT schema_version, proto_definition FROM rm.events_schema_versions WHERE tenant_id = $1 AND topic = $2 ORDER BY stream_version', [PLATFORM_TENANT_ID, topic])).rows;

export interface DlqRow {
  id: string; tenant_id: string; subscription_id: string; consumer_group: string; handler_name: string; source: string; topic: string; partition: number; seq: string;
  event_id: string; type: string; payload: Record<string, unknown>; event: string; failure_count: number; last_error: string; status: 'pending' | 'retrying' | 'resolved';
  due_at: Date | null; created_at: Date; updated_at: Date; resolved_at: Date | null;
}
export const DLQ_COLUMNS = `id, tenant_id, subscription_id, consumer_group, handler_name, source, topic, partition, seq, event_id, type, payload, event, failure_count, last_error,
  status, due_at, created_at, updated_at, resolved_at`;

export const dlqOf = (r: DlqRow): DlqView => ({
  id: r.id, eventId: r.event_id, topic: r.topic, type: r.type, payload: r.payload, failureCount: r.failure_count, lastError: r.last_error, status: r.status,
  createdAt: r.created_at.toISOString(), subscriptionId: r.subscription_id, consumerGroup: r.consumer_group, updatedAt: r.updated_at.toISOString(),
  resolvedAt: r.resolved_at?.toISOString() ?? null,
});

/** the tenant's dead letters, newest first; with source, only those of that module's subscriptions */
export const listDlq = async (q: Queryable, tenantId: string, f: { source?: string; topic?: string; status?: string; after?: { at: string; id: string }; limit: number }): Promise<DlqRow[]> =>
  (await q.query<DlqRow>(`SELECT ${DLQ_COLUMNS} FROM events.dlq
     WHERE tenant_id = $1 AND ($2::text IS NULL OR source = $2) AND ($3::text IS NULL OR topic = $3) AND ($4::text IS NULL OR status = $4)
       AND ($5::timestamptz IS NULL OR (created_at, id) < ($5::timestamptz, $6::uuid))
     ORDER BY created_at DESC, id DESC LIMIT $7`,
  [tenantId, f.source ?? null, f.topic ?? null, f.status ?? null, f.after?.at ?? null, f.after?.id ?? null, f.limit])).rows;

export const findDlq = async (q: Queryable, tenantId: string, id: string, source?: string): Promise<DlqRow | null> =>
  (await q.query<DlqRow>(`SELECT ${DLQ_COLUMNS} FROM events.dlq WHERE tenant_id = $1 AND id = $2 AND ($3::text IS NULL OR source = $3)`, [tenantId, id, source ?? null])).rows[0] ?? null;

export interface TaskRow {
  id: string; type: string; payload: Record<string, unknown>; status: 'queued' | 'running' | 'done' | 'failed'; attempts: number; max_attempts: number; run_at: Date;
  last_error: string | null; created_at: Date; updated_at: Date; completed_at: Date | null;
}
const TASK_COLUMNS = 'id, type, payload, status, attempts, max_attempts, run_at, last_error, created_at, updated_at, completed_at';
export const taskOf = (r: TaskRow) => ({
  id: r.id, type: r.type, payload: r.payload, status: r.status, attempts: r.attempts, maxAttempts: r.max_attempts, runAt: r.run_at.toISOString(),
  lastError: r.last_error, createdAt: r.created_at.toISOString(), updatedAt: r.updated_at.toISOString(), completedAt: r.completed_at?.toISOString() ?? null,
});

export const listTasks = async (q: Queryable, tenantId: string, f: { status?: string; type?: string; after?: { at: string; id: string }; limit: number }): Promise<TaskRow[]> =>
  (await q.query<TaskRow>(`SELECT ${TASK_COLUMNS} FROM events.tasks
     WHERE tenant_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR type = $3)
       AND ($4::timestamptz IS NULL OR (created_at, id) < ($4::timestamptz, $5::uuid))
     ORDER BY created_at DESC, id DESC LIMIT $6`,
  [tenantId, f.status ?? null, f.type ?? null, f.after?.at ?? null, f.after?.id ?? null, f.limit])).rows;

export const findTask = async (q: Queryable, tenantId: string, id: string): Promise<TaskRow | null> =>
  (await q.query<TaskRow>(`SELECT ${TASK_COLUMNS} FROM events.tasks WHERE tenant_id = $1 AND id = $2`, [tenantId, id])).rows[0] ?? null;
