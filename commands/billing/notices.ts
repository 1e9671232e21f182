import type { DueNotice, NoticeKind } from '../../domain/billing/notices';
import type { NotificationPort, PlatformNotification } from '../../infra/notifications';
import type { Queryable } from '../../infra/postgres/db';
import type { Backoff, QueueShape } from '../../infra/queue';
import { backoffMs, claimItems } from '../../infra/queue';
import type { Clock, IdGenerator } from '../../infra/runtime/clock';
import type { TenantDirectory } from './lookups';

/**
 * The billing notice port: how a notice reaches a tenant. In a deployment it is the platform's
 * notification port (kernel.notifications): queued, retried and kept in the history by the
 * notification service when it is installed, straight to the mail port otherwise. Tests may pass
 * a port of their own (BillingOverrides.notices).
 */
export interface BillingNotice {
  tenantId: string;
  to: string;
  kind: NoticeKind;
  /** names the notice once (the outbox key): a receiver may deduplicate on it */
  key: string;
  subject: string;
  text: string;
}

export interface NoticePort {
  send(notice: BillingNotice): Promise<void>;
}

/** the steps that block the tenant come first in a busy queue */
const PRIORITY: Record<NoticeKind, PlatformNotification['priority']> = {
  trial_ending: 'normal',
  past_due: 'high',
  payment_reminder: 'normal',
  suspended: 'high',
  termination_warning: 'high',
  terminated: 'critical',
  cancel_scheduled: 'normal',
};

/** through the notification port the kernel holds at the time of sending (the notification service installs its own at start) */
export const platformNotices = (port: () => NotificationPort): NoticePort => ({
  send: async (n) => {
    await port().send({
      tenantId: n.tenantId,
      recipient: { address: n.to },
      subject: n.subject,
      body: n.text,
      headers: {
        'X-Platform-Purpose': `billing.${n.kind}`,
        'X-Platform-Notice': n.key,
        'X-Platform-Tenant': n.tenantId,
      },
      priority: PRIORITY[n.kind],
      purpose: `billing.${n.kind}`,
      module: 'billing',
    });
  },
});

/**
 * The outbox of notices (billing.notices): recorded once per key by the escalation step, in its
 * own transaction, then delivered by deliverNotices — claimed in a short transaction, sent with no
 * transaction open, marked sent after; a notice whose delivery failed is retried with backoff.
 */
export const recordNotices = async (
  q: Queryable,
  ids: IdGenerator,
  at: Date,
  tenantId: string,
  subscriptionId: string,
  due: DueNotice[],
): Promise<number> => {
  let recorded = 0;
  for (const n of due) {
    const { rowCount } = await q.query(
      `INSERT INTO billing.notices (id, tenant_id, subscription_id, notice_key, kind, episode, subject, body, created_at, next_attempt_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) ON CONFLICT (tenant_id, subscription_id, notice_key) DO NOTHING`,
      [ids.next(), tenantId, subscriptionId, n.key, n.kind, n.episode, n.subject, n.text, at],
    );
    recorded += rowCount ?? 0;
  }
  return recorded;
};

/** notices of an unpaid episode that reached the tenant (or could not: no address is known) */
export const noticesDelivered = async (
  q: Queryable,
  tenantId: string,
  subscriptionId: string,
  episode: string,
): Promise<number> =>
  Number(
    (
      await q.query<{ n: string }>(
        `SELECT count(*)::text AS n FROM billing.notices WHERE tenant_id = $1 AND subscription_id = $2 AND episode = $3 AND status IN ('sent', 'no_recipient')`,
        [tenantId, subscriptionId, episode],
      )
    ).rows[0]!.n,
  );

/** billing.notices as a queue of the kernel's (infra/queue.ts): leased for two minutes, retried without end */
const NOTICES: QueueShape = { table: 'billing.notices', key: ['id'] };
const LEASE_MS = 120_000;
const BACKOFF: Backoff = { steps: [5_000, 30_000, 120_000, 600_000, 3_600_000] };

interface Claimed {
  id: string;
  tenant_id: string;
  notice_key: string;
  kind: NoticeKind;
  subject: string;
  body: string;
  attempts: number;
}

export const deliverNotices = async (
  db: Queryable,
  port: NoticePort,
  tenants: TenantDirectory,
  clock: Clock,
  onError: (error: unknown, id: string) => void,
  limit = 100,
): Promise<{ sent: number; more: boolean }> => {
  // due on the business clock ($1); leased on the database's (now()): see migration 0401
  const rows = await claimItems<Claimed>(db, NOTICES, {
    due: `item.status = 'pending' AND item.next_attempt_at <= $1 AND (item.leased_until IS NULL OR item.leased_until < now())`,
    order: 'item.next_attempt_at',
    set: `leased_until = now() + interval '${LEASE_MS} milliseconds', attempts = t.attempts + 1`,
    returning: 't.id, t.tenant_id, t.notice_key, t.kind, t.subject, t.body, t.attempts',
    values: [clock.now()],
    limit,
  });
  let sent = 0;
  for (const n of rows) {
    const to = await tenants.noticeRecipient(db, n.tenant_id);
    if (!to) {
      await db.query(`UPDATE billing.notices SET status = 'no_recipient', sent_at = $2 WHERE id = $1`, [
        n.id,
        clock.now(),
      ]);
      continue;
    }
    try {
      await port.send({ tenantId: n.tenant_id, to, kind: n.kind, key: n.notice_key, subject: n.subject, text: n.body });
      await db.query(
        `UPDATE billing.notices SET status = 'sent', sent_at = $2, recipient = $3, last_error = NULL WHERE id = $1`,
        [n.id, clock.now(), to],
      );
      sent += 1;
    } catch (error) {
      onError(error, n.id);
      const wait = backoffMs(BACKOFF, n.attempts);
      await db.query(
        `UPDATE billing.notices SET last_error = $2, next_attempt_at = $3, leased_until = NULL WHERE id = $1`,
        [n.id, String((error as Error).message ?? error).slice(0, 500), new Date(clock.now().getTime() + wait)],
      );
    }
  }
  return { sent, more: rows.length === limit };
};
