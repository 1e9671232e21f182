import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { RegisteredSchemaRow } from '../../domain/events/catalog';
import type { DlqRecord, SubscriptionRecord } from '../../domain/events/views';
import type { Queryable } from '../../infra/postgres/db';

/** what the bus's commands and workers read: subscriptions (inline read model), schemas, dead letters; tenant-filtered where a tenant asks */
export type SubscriptionRow = SubscriptionRecord;
export type DlqRow = DlqRecord;

const SUB_COLUMNS =
  'tenant_id, id, topic, consumer_group, handler_name, source, delivery, dedup, status, created_at, deleted_at';

/** a subscription of the tenant; with source, only that module's */
export const findSubscription = async (
  q: Queryable,
  tenantId: string,
  id: string,
  source?: string,
): Promise<SubscriptionRow | null> =>
  (
    await q.query<SubscriptionRow>(
      `SELECT ${SUB_COLUMNS} FROM rm.events_subscriptions WHERE tenant_id = $1 AND id = $2 AND ($3::text IS NULL OR source = $3)`,
      [tenantId, id, source ?? null],
    )
  ).rows[0] ?? null;

export const activeSubscriptionByGroup = async (
  q: Queryable,
  tenantId: string,
  consumerGroup: string,
  topic: string,
): Promise<SubscriptionRow | null> =>
  (
    await q.query<SubscriptionRow>(
      `SELECT ${SUB_COLUMNS} FROM rm.events_subscriptions WHERE tenant_id = $1 AND consumer_group = $2 AND topic = $3 AND status = 'active'`,
      [tenantId, consumerGroup, topic],
    )
  ).rows[0] ?? null;

/** a subscription by id across tenants: for the workers, which act for every tenant */
export const subscriptionById = async (q: Queryable, id: string): Promise<SubscriptionRow | null> =>
  (await q.query<SubscriptionRow>(`SELECT ${SUB_COLUMNS} FROM rm.events_subscriptions WHERE id = $1`, [id])).rows[0] ??
  null;

export const registeredSchema = async (q: Queryable, topic: string): Promise<RegisteredSchemaRow | null> =>
  (
    await q.query<RegisteredSchemaRow>(
      'SELECT schema_version, proto_definition, policy, registered_at FROM rm.events_topic_schemas WHERE tenant_id = $1 AND topic = $2',
      [PLATFORM_TENANT_ID, topic],
    )
  ).rows[0] ?? null;

export const schemaVersions = async (
  q: Queryable,
  topic: string,
): Promise<{ schema_version: string; proto_definition: string }[]> =>
  (
    await q.query<{ schema_version: string; proto_definition: string }>(
      'SELECT schema_version, proto_definition FROM rm.events_schema_versions WHERE tenant_id = $1 AND topic = $2 ORDER BY stream_version',
      [PLATFORM_TENANT_ID, topic],
    )
  ).rows;

export const DLQ_COLUMNS = `id, tenant_id, subscription_id, consumer_group, handler_name, source, topic, partition, seq, event_id, type, payload, event, failure_count, last_error,
  status, due_at, created_at, updated_at, resolved_at`;

export const findDlq = async (q: Queryable, tenantId: string, id: string, source?: string): Promise<DlqRow | null> =>
  (
    await q.query<DlqRow>(
      `SELECT ${DLQ_COLUMNS} FROM events.dlq WHERE tenant_id = $1 AND id = $2 AND ($3::text IS NULL OR source = $3)`,
      [tenantId, id, source ?? null],
    )
  ).rows[0] ?? null;
