import type { ErasurePhase } from '../../domain/shared/erasure';
import { terminationIdOf } from '../../domain/shared/erasure';
import { phaseErased, requestErasure } from '../../infra/erasure';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import { dueNotices } from '../../domain/billing/notices';
import { FREE_PLAN, FREE_PLAN_ID } from '../../domain/billing/plan';
import { LIMIT_OF, RESOURCES } from '../../domain/billing/resources';
import type { Subscription } from '../../domain/billing/subscription';
import { plusDays, reached, TIMELINE } from '../../domain/billing/timeline';
import type { Kernel } from '../../infra/kernel';
import { systemMeta } from '../../infra/kernel';
import type { BillingContext } from './context';
import { advanceSubscription, createSubscription } from './handlers';
import { findPlan, usageOf } from './lookups';
import { deliverNotices, noticesDelivered, recordNotices } from './notices';

const BATCH = 200;

/**
 * The subscriptions the clock may have something for: trials in their last days, periods that
 * ended, unpaid episodes, terminations under way, scheduled cancellations and downgrades in
 * their grace — each tenant's current subscription only.
 */
const dueSql = `
  SELECT s.tenant_id, s.snapshot FROM rm.billing_subscriptions s
  WHERE s.tenant_id > $2
    AND s.status <> 'canceled' AND NOT (s.status = 'terminated' AND s.termination_phase = 'completed')
    AND (s.status IN ('past_due', 'suspended', 'terminated') OR s.current_period_end <= $1 OR s.cancel_at_period_end
      OR (s.status = 'trialing' AND s.trial_end <= $1::timestamptz + interval '${TIMELINE.trialNoticeDays} days')
      OR s.snapshot->>'downgradedAt' IS NOT NULL)
    AND s.created_at = (SELECT max(c.created_at) FROM rm.billing_subscriptions c WHERE c.tenant_id = s.tenant_id)
  ORDER BY s.tenant_id LIMIT $3`;

/** a downgraded tenant still above one of the new plan's limits */
const overLimit = async (kernel: Kernel, s: Subscription): Promise<boolean> => {
  if (
    s.downgradedAt === null ||
    !reached(kernel.clock.now().toISOString(), plusDays(s.downgradedAt, TIMELINE.downgradeGraceDays))
  )
    return false;
  const plan = await findPlan(kernel.db, s.planId);
  const usage = await usageOf(kernel.db, kernel.people, s.tenantId, kernel.clock.now());
  return RESOURCES.some((r) => {
    const limit = (plan?.limits ?? FREE_PLAN.limits)[LIMIT_OF[r]];
    return limit !== 0 && usage[r] > limit;
  });
};

/**
 * Whether the services have confirmed the erasure billing asked for in the current phase of a
 * termination (their confirmations on the log, infra/erasure.ts); nothing outside a termination.
 */
const erasedPhases = async (kernel: Kernel, s: Subscription): Promise<Partial<Record<ErasurePhase, boolean>>> => {
  const t = s.termination;
  if (s.status !== 'terminated' || !t?.erasureRequested || t.phase === 'completed') return {};
  return { [t.phase]: await phaseErased(kernel.db, s.tenantId, terminationIdOf(s.id, t.startedAt), t.phase) };
};

/**
 * The erasure request of a phase, on the log in the transition's own transaction: recorded when
 * the advance asked for the erasure of records or moved on to the files (domain/shared/erasure.ts).
 */
const requestDueErasure = async (uow: UnitOfWork, before: Subscription, after: Subscription): Promise<void> => {
  const t = after.termination;
  if (after.status !== 'terminated' || !t?.erasureRequested || t.phase === 'completed') return;
  const was = before.termination;
  if (was?.erasureRequested && was.phase === t.phase && was.startedAt === t.startedAt) return;
  await requestErasure(uow, after.tenantId, {
    terminationId: terminationIdOf(after.id, t.startedAt),
    subscriptionId: after.id,
    phase: t.phase,
  });
};

/**
 * One pass of the escalation worker (spec 001 escalation timeline): for every subscription with
 * something due, the transitions the clock makes due and the notices they call for, recorded in
 * one transaction; then the notices are delivered. Safe to run in several processes at once:
 * transitions are optimistic-concurrency commands and notices are recorded once per key.
 */
export const escalationStep = async (
  kernel: Kernel,
  ctx: BillingContext,
): Promise<{ transitions: number; notices: number; delivered: number }> => {
  let after = '';
  let transitions = 0;
  let notices = 0;
  for (;;) {
    const now = ctx.clock.now();
    const { rows } = await kernel.db.query<{ tenant_id: string; snapshot: Subscription }>(dueSql, [now, after, BATCH]);
    for (const row of rows) {
      const before = row.snapshot;
      try {
        const facts = {
          erased: await erasedPhases(kernel, before),
          overLimit: await overLimit(kernel, before),
          noticesSent: before.pastDueSince
            ? await noticesDelivered(kernel.db, row.tenant_id, before.id, before.pastDueSince)
            : 0,
        };
        const result = await kernel.commands.run(systemMeta(row.tenant_id), async (uow) => {
          const s = await advanceSubscription(uow, ctx, row.tenant_id, facts);
          if (!s) return { moved: false, recorded: 0 };
          await requestDueErasure(uow, before, s);
          const plan = (await findPlan(uow.tx, s.planId)) ?? { priceCents: FREE_PLAN.priceCents };
          const recorded = await recordNotices(
            uow.tx,
            ctx.ids,
            ctx.clock.now(),
            row.tenant_id,
            s.id,
            dueNotices(s, plan, ctx.clock.now().toISOString()),
          );
          return { moved: s.version !== before.version, recorded };
        });
        if (result.moved) transitions += 1;
        notices += result.recorded;
      } catch (error) {
        kernel.logger.warn(
          { err: error, tenantId: row.tenant_id },
          'billing escalation step failed for a tenant; retried at the next run',
        );
      }
    }
    if (rows.length < BATCH) break;
    after = rows[rows.length - 1]!.tenant_id;
  }
  const delivered = await deliverAllNotices(kernel, ctx);
  return { transitions, notices, delivered };
};

export const deliverAllNotices = async (kernel: Kernel, ctx: BillingContext): Promise<number> => {
  let delivered = 0;
  for (;;) {
    const { sent, more } = await deliverNotices(kernel.db, ctx.notices, ctx.tenants, ctx.clock, (error, id) =>
      kernel.logger.warn({ err: error, noticeId: id }, 'billing notice delivery failed; retried later'),
    );
    delivered += sent;
    if (!more) return delivered;
  }
};

/** a new tenant's trial on the free plan (auth.tenant.created); nothing when it has a subscription */
export const startTrial = async (kernel: Kernel, ctx: BillingContext, tenantId: string): Promise<void> => {
  await kernel.commands.run(systemMeta(tenantId), (uow) =>
    createSubscription(uow, ctx, { tenantId, planId: FREE_PLAN_ID, externalId: null, automatic: true }),
  );
};

/** every tenant without a subscription gets its trial: those created before billing was deployed, and any the consumer missed */
export const backfillSubscriptions = async (kernel: Kernel, ctx: BillingContext): Promise<number> => {
  let created = 0;
  for (;;) {
    const missing = await ctx.tenants.withoutSubscription(kernel.db, BATCH);
    let progressed = false;
    for (const { tenantId } of missing) {
      try {
        await startTrial(kernel, ctx, tenantId);
        created += 1;
        progressed = true;
      } catch (error) {
        kernel.logger.warn({ err: error, tenantId }, 'billing backfill failed for a tenant; retried at the next run');
      }
    }
    if (missing.length < BATCH || !progressed) return created;
  }
};

/** once per day: each tenant's usage as it stands, for GET /billing/usage/history */
export const takeUsageSnapshots = async (kernel: Kernel, ctx: BillingContext): Promise<number> => {
  const now = ctx.clock.now();
  const { rowCount } = await kernel.db.query(
    `INSERT INTO billing.usage_snapshots (tenant_id, day, usage, taken_at)
     SELECT s.tenant_id, ($1::timestamptz AT TIME ZONE 'UTC')::date,
       COALESCE((SELECT jsonb_object_agg(u.resource, u.used) FROM rm.billing_usage u WHERE u.tenant_id = s.tenant_id), '{}'::jsonb), $1
     FROM (SELECT DISTINCT tenant_id FROM rm.billing_subscriptions) s
     ON CONFLICT (tenant_id, day) DO NOTHING`,
    [now],
  );
  return rowCount ?? 0;
};
