import type { LagLevel } from '../../domain/events/lag';
import { decideLagAlert } from '../../domain/events/lag';
import type { Kernel } from '../../infra/kernel';

interface Lagging {
  subscription_id: string;
  tenant_id: string;
  topic: string;
  consumer_group: string;
  oldest: Date | null;
  level: LagLevel | null;
  notified_level: LagLevel | null;
  bulk: boolean;
}

/**
 * One round of consumer lag alerts (spec 002): for every active subscription, the age of the oldest
 * of its tenant's events it has not processed decides the level (domain/events/lag.ts). A level is
 * announced once as it is reached: a log line (info, warning, error for critical), and from
 * warning on a notification to the tenant's admins (its Owners) through kernel.notifications —
 * except a warning during a bulk-import spike of the tenant on that topic. The alert state is
 * written compare-and-set, so of several workers only one announces.
 */
export const checkLag = async (kernel: Kernel): Promise<{ checked: number; notified: number }> => {
  const now = kernel.clock.now();
  const { rows } = await kernel.db.query<Lagging>(
    `SELECT s.id AS subscription_id, s.tenant_id, s.topic, s.consumer_group,
            (SELECT min(r.ts) FROM events.cursors c JOIN events.records r ON r.topic = c.topic AND r.tenant_id = c.tenant_id AND r.partition = c.partition AND r.seq = c.next_seq
              WHERE c.subscription_id = s.id::uuid AND r.log_offset >= c.min_log_offset) AS oldest,
            a.level, a.notified_level,
            EXISTS (SELECT 1 FROM events.bulk_imports b WHERE b.tenant_id = s.tenant_id AND b.topic = s.topic AND b.until > $1) AS bulk
       FROM rm.events_subscriptions s LEFT JOIN events.lag_alerts a ON a.subscription_id = s.id::uuid
      WHERE s.status = 'active'`,
    [now],
  );
  let notified = 0;
  for (const row of rows) {
    const lagMs = row.oldest ? now.getTime() - row.oldest.getTime() : 0;
    const decision = decideLagAlert(lagMs, { notified: row.notified_level }, row.bulk);
    if (decision.notified === row.notified_level && decision.level === (row.level ?? 'ok')) continue;
    const { rowCount } = await kernel.db.query(
      `INSERT INTO events.lag_alerts AS a (subscription_id, tenant_id, level, since, notified_level, updated_at) VALUES ($1, $2, $3, $4, $5, $4)
       ON CONFLICT (subscription_id) DO UPDATE SET level = EXCLUDED.level, notified_level = EXCLUDED.notified_level, updated_at = EXCLUDED.updated_at,
         since = CASE WHEN a.level = EXCLUDED.level THEN a.since ELSE EXCLUDED.since END
       WHERE a.notified_level IS NOT DISTINCT FROM $6`,
      [row.subscription_id, row.tenant_id, decision.level, now, decision.notified, row.notified_level],
    );
    if (!rowCount) continue;
    const fields = {
      subscriptionId: row.subscription_id,
      tenantId: row.tenant_id,
      topic: row.topic,
      consumerGroup: row.consumer_group,
      lagSeconds: Math.floor(lagMs / 1000),
    };
    if (decision.log === 'critical') kernel.logger.error(fields, 'consumer lag critical (over 15 minutes)');
    else if (decision.log === 'warning') kernel.logger.warn(fields, 'consumer lag warning (over 5 minutes)');
    else if (decision.log === 'info')
      kernel.logger.info({ ...fields, bulkImport: row.bulk }, 'consumer lag over 1 minute');
    else if (decision.log === 'ok') kernel.logger.info(fields, 'consumer lag back under 1 minute');
    if (decision.notify) notified += await notifyAdmins(kernel, row, decision.notify, lagMs);
  }
  return { checked: rows.length, notified };
};

const notifyAdmins = async (
  kernel: Kernel,
  row: Lagging,
  level: 'warning' | 'critical',
  lagMs: number,
): Promise<number> => {
  // the tenant's admins: the active holders of its built-in roles (none on a platform without identity)
  const addresses = await kernel.people.adminAddresses(kernel.db, row.tenant_id);
  const minutes = Math.floor(lagMs / 60_000);
  for (const address of addresses) {
    await kernel.notifications
      .send({
        tenantId: row.tenant_id,
        recipient: { address },
        priority: level === 'critical' ? 'critical' : 'high',
        purpose: `events.consumer-lag.${level}`,
        module: 'events',
        subject: `${level === 'critical' ? 'Critical' : 'Warning'}: ${row.consumer_group} is ${minutes} minutes behind on ${row.topic}`,
        body:
          `The subscription ${row.subscription_id} (${row.consumer_group}) has not processed events of ${row.topic} for ${minutes} minutes.\n` +
          'Check its handler; GET /v1/events/subscriptions/{id}/position shows its lag, GET /v1/events/dlq what failed.',
      })
      .catch((error: unknown) =>
        kernel.logger.warn({ err: error, tenantId: row.tenant_id }, 'lag alert notification failed'),
      );
  }
  return addresses.length;
};
