import type { Kernel } from '../../infra/kernel';
import type { NotifyContext } from './context';
import { REPLAY_WINDOW_MS } from '../../domain/notify/socket';

const DAY_MS = 86_400_000;
const CHUNK = 5_000;

/** deletes up to CHUNK rows a time until none is left, so no purge holds locks for long */
const inChunks = async (kernel: Kernel, text: string, values: unknown[]): Promise<number> => {
  let total = 0;
  for (;;) {
    const { rowCount } = await kernel.db.query(text, values);
    total += rowCount ?? 0;
    if ((rowCount ?? 0) < CHUNK) return total;
  }
};

/**
 * Retention (spec 002): the history of delivered notifications is kept 90 days
 * (NOTIFY_HISTORY_RETENTION_DAYS), failed ones 180 days with their queued content (for a retry);
 * the socket replay buffer one hour; rate windows a minute. The events stay in the event store;
 * a rebuild of the history brings old rows back until the next purge removes them again.
 */
export const purgeExpired = async (
  kernel: Kernel,
  ctx: NotifyContext,
): Promise<{ history: number; failed: number; buffer: number }> => {
  const now = ctx.clock.now().getTime();
  const historyBefore = new Date(now - ctx.settings.historyRetentionDays * DAY_MS);
  const failedBefore = new Date(now - ctx.settings.failedRetentionDays * DAY_MS);
  // through the view rm.notify_notifications (a simple view: PostgreSQL deletes from the active generation)
  const history = await inChunks(
    kernel,
    `DELETE FROM rm.notify_notifications WHERE (tenant_id, id) IN (
    SELECT tenant_id, id FROM rm.notify_notifications WHERE created_at < $1 AND status = 'delivered' LIMIT ${CHUNK})`,
    [historyBefore],
  );
  const failed = await inChunks(
    kernel,
    `DELETE FROM rm.notify_notifications WHERE (tenant_id, id) IN (
    SELECT tenant_id, id FROM rm.notify_notifications WHERE status = 'failed' AND failed_at < $1 LIMIT ${CHUNK})`,
    [failedBefore],
  );
  await inChunks(
    kernel,
    `DELETE FROM notify.deliveries WHERE id IN (SELECT id FROM notify.deliveries WHERE state = 'failed' AND created_at < $1 LIMIT ${CHUNK})
    AND NOT EXISTS (SELECT 1 FROM rm.notify_notifications n WHERE n.tenant_id = notify.deliveries.tenant_id AND n.id = notify.deliveries.id::text)`,
    [failedBefore],
  );
  const buffer = await inChunks(
    kernel,
    `DELETE FROM notify.socket_buffer WHERE seq IN (SELECT seq FROM notify.socket_buffer WHERE created_at < $1 LIMIT ${CHUNK})`,
    [new Date(now - REPLAY_WINDOW_MS)],
  );
  await kernel.db.query('DELETE FROM notify.rate_windows WHERE window_start < $1', [new Date(now - 3600_000)]);
  return { history, failed, buffer };
};
