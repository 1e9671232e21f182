import { notifyErrors } from '../../domain/notify/errors';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import type { Kernel } from '../../infra/kernel';
import { NotificationAggregate, notificationStream } from './aggregates';
import { notifyContext } from './context';
import { pendingCount, queueCapSql } from './queue';

/**
 * POST /notify/:id/retry: a failed notification goes back to the queue with a fresh set of
 * retries (spec 002: failed → queued); anything else is 400 notification-not-failed. The queue row
 * is locked first, so no worker or second retry acts on it meanwhile; the tenant's queue cap holds.
 */
export const retryNotification = async (
  kernel: Kernel,
  uow: UnitOfWork,
  id: string,
  /**
   * a module's key retries only what its module sent and is still in the queue: the tenant's other
   * notifications are not there for it (404), whatever their state
   */
  module: string | null = null,
): Promise<{ notificationId: string; status: 'queued' }> => {
  const ctx = notifyContext(kernel);
  const tenantId = uow.meta.tenantId;
  const { rows } = await uow.tx.query<{ rate_limited: boolean; module: string | null }>(
    'SELECT rate_limited, module FROM notify.deliveries WHERE tenant_id = $1 AND id = $2 FOR UPDATE',
    [tenantId, id],
  );
  if (module !== null && rows[0]?.module !== module) throw notifyErrors.notificationNotFound();
  const loaded = await uow.load(NotificationAggregate, notificationStream(tenantId, id));
  const now = ctx.clock.now();
  uow.decide(NotificationAggregate, loaded, { type: 'Retry', now: now.toISOString() });
  // a failed notification keeps its queue row (and content) until the failed-history retention purges both
  const row = rows[0];
  if (!row) throw notifyErrors.notificationNotFound();
  if (row.rate_limited) {
    const max = ctx.settings.queueMaxPerTenant;
    await uow.tx.query(queueCapSql.lockTenantSql(tenantId));
    if ((await pendingCount(uow.tx, tenantId, max)) + 1 > max) throw notifyErrors.queueFull(max);
  }
  await uow.tx.query(
    `UPDATE notify.deliveries SET state = 'queued', attempt = 0, due_at = $3, possible_duplicate = false, last_error = NULL, claimed_by = NULL, lease_until = NULL
    WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id, now],
  );
  await uow.tx.query(queueCapSql.WAKE_SQL);
  return { notificationId: id, status: 'queued' };
};
