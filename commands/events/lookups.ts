import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { DlqRecord, BusSubscriptionRecord } from '../../domain/events/views';
import type { Queryable } from '../../infra/postgres/db';
import { SUB_COLUMNS } from '../../projections/events/queries';

/** the reads the read side runs too are its own (one copy): a subscription, a dead letter, a topic's registered schema */
export { DLQ_COLUMNS, findDlq, findSubscription, registeredSchema } from '../../projections/events/queries';

/** what the bus's commands and workers read: subscriptions (inline read model), schemas, dead letters; tenant-filtered where a tenant asks */
export type BusSubscriptionRow = BusSubscriptionRecord;
export type DlqRow = DlqRecord;

export const activeSubscriptionByGroup = async (
  q: Queryable,
  tenantId: string,
  consumerGroup: string,
  topic: string,
): Promise<BusSubscriptionRow | null> =>
  (
    await q.query<BusSubscriptionRow>(
      `SELECT ${SUB_COLUMNS} FROM rm.events_subscriptions WHERE tenant_id = $1 AND consumer_group = $2 AND topic = $3 AND status = 'active'`,
      [tenantId, consumerGroup, topic],
    )
  ).rows[0] ?? null;

/** a subscription by id across tenants: for the workers, which act for every tenant */
export const subscriptionById = async (q: Queryable, id: string): Promise<BusSubscriptionRow | null> =>
  (await q.query<BusSubscriptionRow>(`SELECT ${SUB_COLUMNS} FROM rm.events_subscriptions WHERE id = $1`, [id]))
    .rows[0] ?? null;

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
