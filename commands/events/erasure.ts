import { ERASURE_RULES } from '../../domain/shared/erasure';
import type { Eraser } from '../../infra/erasure';
import { deleteTenantRows, deleteTenantStreams } from '../../infra/erasure';
import { inTransaction } from '../../infra/postgres/db';

/**
 * The event bus's rule (README, Termination): in deleting_records, the tenant's subscriptions
 * (streams and read model), what they processed, their cursors and copies of the topics, dead
 * letters, tasks, lag alerts, bulk imports and the tenant's own topic schemas.
 */
export const eventsEraser: Eraser = {
  domain: 'events',
  phase: ERASURE_RULES.events,
  erase: async (kernel, tenantId) => {
    await inTransaction(kernel.db, async (tx) => {
      await tx.query(
        `DELETE FROM events.processed WHERE subscription_id::text IN (SELECT id::text FROM rm.events_subscriptions WHERE tenant_id = $1)`,
        [tenantId],
      );
      await deleteTenantRows(tx, tenantId, [
        'events.dlq',
        'events.tasks',
        'events.cursors',
        'events.records',
        'events.tenant_heads',
        'events.lag_alerts',
        'events.bulk_imports',
        'rm.events_subscriptions',
        'rm.events_topic_schemas',
        'rm.events_schema_versions',
      ]);
      await deleteTenantStreams(tx, tenantId, ['events.subscription', 'events.topic-schema']);
    });
  },
};
