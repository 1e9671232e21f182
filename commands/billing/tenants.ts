import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import { isDomainError } from '../../domain/shared/errors';
import type { LogCheckpoint } from '../../infra/eventstore/event-store';
import { checkpointOf, LOG_START } from '../../infra/eventstore/event-store';
import type { Kernel } from '../../infra/kernel';
import type { BillingContext } from './context';
import { startTrial } from './escalation';

const CHECKPOINT = 'reactor:billing.tenant-trials';
const BATCH = 500;

const later = (a: LogCheckpoint, b: LogCheckpoint): LogCheckpoint =>
  a.transactionId > b.transactionId || (a.transactionId === b.transactionId && a.position >= b.position) ? a : b;

/**
 * New tenants get their trial (spec 001): identity's auth.tenant.created, read from the global log
 * of the event store — what the relay publishes on platform.auth.events, in the same order — with
 * a checkpoint of billing's own in es.checkpoints, like an async projection. Each event is applied
 * at least once (a trial is created once: the command is a no-op for a tenant with a subscription).
 * Returns how many tenants it saw.
 */
export const trialsForNewTenants = async (kernel: Kernel, ctx: BillingContext): Promise<number> => {
  await kernel.db.query('INSERT INTO es.checkpoints (name) VALUES ($1) ON CONFLICT DO NOTHING', [CHECKPOINT]);
  const { rows } = await kernel.db.query<{ transaction_id: string; position: string }>(
    'SELECT transaction_id::text AS transaction_id, position FROM es.checkpoints WHERE name = $1',
    [CHECKPOINT],
  );
  const after = rows[0]
    ? { transactionId: BigInt(rows[0].transaction_id), position: BigInt(rows[0].position) }
    : LOG_START;
  // the head first: with nothing of interest behind it, the checkpoint moves there and the log is not scanned again
  const head = await kernel.store.headCheckpoint(kernel.db);
  const events = await kernel.store.readAll(kernel.db, after, BATCH, { types: ['auth.tenant.created'] });
  for (const event of events) {
    if (event.tenantId === PLATFORM_TENANT_ID) continue;
    try {
      await startTrial(kernel, ctx, event.tenantId);
    } catch (error) {
      // a refusal is an answer (the backfill looks again); anything else is retried from the checkpoint
      if (!isDomainError(error)) throw error;
      kernel.logger.warn({ err: error, tenantId: event.tenantId }, 'billing: no trial for a new tenant');
    }
  }
  const last = events.length ? checkpointOf(events[events.length - 1]!) : after;
  const next = events.length === BATCH ? last : later(last, head);
  await kernel.db.query(
    `UPDATE es.checkpoints SET transaction_id = $2::xid8, position = $3, updated_at = now()
     WHERE name = $1 AND (transaction_id, position) < ($2::xid8, $3::bigint)`,
    [CHECKPOINT, next.transactionId.toString(), next.position.toString()],
  );
  return events.length;
};
