import { moneyContext } from '../../commands/money/context';
import { expireHold } from '../../commands/money/handlers';
import { auditRecord } from '../../infra/audit';
import type { Kernel } from '../../infra/kernel';
import { systemMeta } from '../../infra/kernel';
import { ensureMonthlyPartitions } from '../../projections/money/partitions';

const BATCH = 200;

/**
 * Expires the holds whose TTL has elapsed (spec 002: held → canceled, frozen back to available,
 * money.hold.expired). Each hold is its own command under its wallet's lock; a hold confirmed or
 * canceled meanwhile is left alone by the decider, so running twice or in two processes is safe.
 * Returns how many holds expired.
 */
export const expireDueHolds = async (kernel: Kernel): Promise<{ expired: number; more: boolean }> => {
  const ctx = moneyContext(kernel);
  const { rows } = await kernel.db.query<{ tenant_id: string; wallet_id: string; id: string }>(
    `SELECT tenant_id, wallet_id, id FROM rm.money_transactions WHERE type = 'hold' AND status = 'held' AND expires_at <= $1 ORDER BY expires_at LIMIT $2`,
    [ctx.clock.now(), BATCH],
  );
  let expired = 0;
  for (const hold of rows) {
    try {
      const done = await kernel.commands.run(systemMeta(hold.tenant_id), async (uow) => {
        if (!(await expireHold(uow, ctx, hold.wallet_id, hold.id))) return false;
        // spec 002: the expiry leaves an audit record too, committed with it
        uow.audit(
          auditRecord(
            {
              action: 'money.hold.expired',
              entityType: 'hold',
              entityId: hold.id,
              tenantId: hold.tenant_id,
              actorId: 'system',
              before: { status: 'held' },
              after: { status: 'canceled', resolution: 'expired' },
              meta: { walletId: hold.wallet_id },
              timestamp: ctx.clock.now().toISOString(),
            },
            kernel.ids.next(),
          ),
        );
        return true;
      });
      if (done) expired += 1;
    } catch (error) {
      kernel.logger.warn(
        { err: error, holdId: hold.id, tenantId: hold.tenant_id },
        'hold expiry failed; retried at the next run',
      );
    }
  }
  return { expired, more: rows.length === BATCH };
};

const HOUR_MS = 3600_000;

/** the worker: every MONEY_HOLD_CLEANUP_INTERVAL_SEC, and the history's coming monthly partitions once an hour */
export const holdExpiryStep = (kernel: Kernel) => {
  let partitionsCheckedAt = 0;
  return async (): Promise<boolean> => {
    const now = moneyContext(kernel).clock.now();
    if (now.getTime() - partitionsCheckedAt >= HOUR_MS) {
      const created = await ensureMonthlyPartitions(kernel.db, now);
      if (created) kernel.logger.info({ created }, 'money history partitions created');
      partitionsCheckedAt = now.getTime();
    }
    const { expired, more } = await expireDueHolds(kernel);
    if (expired) kernel.logger.info({ expired }, 'holds expired');
    return more;
  };
};
