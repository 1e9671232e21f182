import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { PlanInfo } from '../../domain/billing/plan-info';
import { planInfoOf } from '../../domain/billing/plan-info';
import type { PlanRow, PlanSnapshot } from '../../domain/billing/plan';
import { planFromRow } from '../../domain/billing/plan';
import type { Subscription } from '../../domain/billing/subscription';
import type { Usage } from '../../domain/billing/usage';
import { usageFromRows, utcDay } from '../../domain/billing/usage';
import type { People } from '../../infra/people';
import type { Queryable } from '../../infra/postgres/db';

/**
 * Typed reads of billing's read models, for the read API and for billing's commands, workers and
 * gRPC service (commands/billing/lookups.ts re-exports what they read here: one copy of each).
 * Plans are the platform's (they live in the platform tenant); subscriptions and usage are
 * filtered by the tenant the caller may see.
 */
export const PLAN_COLUMNS =
  'id, name, description, price_cents::text, currency, limits, features, provider_price_ids, is_active, created_at, updated_at';

export const findPlan = async (q: Queryable, id: string): Promise<PlanSnapshot | null> => {
  const { rows } = await q.query<PlanRow>(
    `SELECT ${PLAN_COLUMNS} FROM rm.billing_plans WHERE tenant_id = $1 AND id = $2`,
    [PLATFORM_TENANT_ID, id],
  );
  return rows[0] ? planFromRow(rows[0]) : null;
};

/** the active plans by id; keyset on id */
export const listActivePlans = async (
  q: Queryable,
  f: { afterId?: string; limit: number },
): Promise<PlanSnapshot[]> => {
  const { rows } = await q.query<PlanRow>(
    `SELECT ${PLAN_COLUMNS} FROM rm.billing_plans WHERE tenant_id = $1 AND id > $2 AND is_active ORDER BY id LIMIT $3`,
    [PLATFORM_TENANT_ID, f.afterId ?? '', f.limit],
  );
  return rows.map(planFromRow);
};

interface SubscriptionRow {
  snapshot: Subscription;
}

/** by id; another tenant's subscription is not found unless tenantId is left out (the platform owner) */
export const findSubscription = async (q: Queryable, id: string, tenantId?: string): Promise<Subscription | null> => {
  const { rows } =
    tenantId === undefined
      ? await q.query<SubscriptionRow>('SELECT snapshot FROM rm.billing_subscriptions WHERE id = $1', [id])
      : await q.query<SubscriptionRow>(
          'SELECT snapshot FROM rm.billing_subscriptions WHERE tenant_id = $1 AND id = $2',
          [tenantId, id],
        );
  return rows[0]?.snapshot ?? null;
};

/** the tenant's subscriptions; keyset on id */
export const tenantSubscriptions = async (
  q: Queryable,
  tenantId: string,
  f: { afterId?: string; limit: number },
): Promise<Subscription[]> => {
  const { rows } = await q.query<SubscriptionRow>(
    'SELECT snapshot FROM rm.billing_subscriptions WHERE tenant_id = $1 AND id > $2 ORDER BY id LIMIT $3',
    [tenantId, f.afterId ?? '', f.limit],
  );
  return rows.map((r) => r.snapshot);
};

/** the tenant's current subscription: its newest */
export const currentSubscription = async (q: Queryable, tenantId: string): Promise<Subscription | null> => {
  const { rows } = await q.query<SubscriptionRow>(
    'SELECT snapshot FROM rm.billing_subscriptions WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1',
    [tenantId],
  );
  return rows[0]?.snapshot ?? null;
};

/** a customer tenant the directory of people knows (identity's tenants); the platform pseudo-tenant is none */
export const tenantKnown = async (q: Queryable, people: People, tenantId: string): Promise<boolean> =>
  tenantId !== PLATFORM_TENANT_ID && (await people.tenantExists(q, tenantId));

/**
 * A tenant's usage: the counters of billing's usage read model, plus what its owners count without
 * events — users' pending invitations (identity's, spec 001: users = members plus pending
 * invitations) and the events the tenant published on the bus today (the bus's daily counter).
 */
export const usageOf = async (q: Queryable, people: People, tenantId: string, now: Date): Promise<Usage> => {
  // one after the other: q may be a transaction's single connection
  const rows = await q.query<{ resource: string; used: string }>(
    'SELECT resource, used::text FROM rm.billing_usage WHERE tenant_id = $1',
    [tenantId],
  );
  const invitations = await people.pendingInvitations(q, tenantId, now);
  const usage = usageFromRows(rows.rows);
  usage.users += invitations;
  usage.events_per_day = await eventsPublishedToday(q, tenantId, now);
  return usage;
};

/** the events the tenant published on the bus on `now`'s UTC day (the bus's daily counter) */
export const eventsPublishedToday = async (q: Queryable, tenantId: string, now: Date): Promise<number> =>
  Number(
    (
      await q.query<{ n: string }>(
        'SELECT published::text AS n FROM events.daily_usage WHERE tenant_id = $1 AND day = $2',
        [tenantId, utcDay(now)],
      )
    ).rows[0]?.n ?? 0,
  );

/** a tenant's current subscription, plan info and usage from the read models (one subscription, up to two plans, one usage read) */
const limitsOf = async (
  q: Queryable,
  people: People,
  tenantId: string,
  now: Date,
): Promise<{ subscription: Subscription | null; info: PlanInfo; usage: Usage }> => {
  const [subscription, usage] = await Promise.all([
    currentSubscription(q, tenantId),
    usageOf(q, people, tenantId, now),
  ]);
  const [plan, pending] = subscription
    ? await Promise.all([
        findPlan(q, subscription.planId),
        subscription.pendingPlanId ? findPlan(q, subscription.pendingPlanId) : null,
      ])
    : [null, null];
  return { subscription, info: planInfoOf(tenantId, subscription, plan, pending), usage };
};

/** a tenant's plan info and usage (the limits CheckLimit and admission decide with) */
export const loadTenantLimits = async (
  q: Queryable,
  people: People,
  tenantId: string,
  now: Date,
): Promise<{ info: PlanInfo; usage: Usage }> => {
  const { info, usage } = await limitsOf(q, people, tenantId, now);
  return { info, usage };
};

export interface TenantUsage {
  tenantId: string;
  subscription: Subscription | null;
  info: PlanInfo;
  usage: Usage;
}

/** GET /billing/usage: the tenant's usage against the limits in force, read fresh; null for a tenant neither billing nor identity knows */
export const tenantUsage = async (
  q: Queryable,
  people: People,
  tenantId: string,
  now: Date,
): Promise<TenantUsage | null> => {
  const { subscription, info, usage } = await limitsOf(q, people, tenantId, now);
  if (!subscription && !(await tenantKnown(q, people, tenantId))) return null;
  return { tenantId, subscription, info, usage };
};

export interface UsageSnapshotRow {
  day: string;
  usage: Partial<Usage>;
  takenAt: string;
}

/** newest day first; keyset on the day */
export const usageHistory = async (
  q: Queryable,
  tenantId: string,
  f: { beforeDay?: string; limit: number },
): Promise<UsageSnapshotRow[]> => {
  const { rows } = await q.query<{ day: string; usage: Partial<Usage>; taken_at: Date }>(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, usage, taken_at FROM billing.usage_snapshots WHERE tenant_id = $1 AND ($2::date IS NULL OR day < $2::date)
     ORDER BY day DESC LIMIT $3`,
    [tenantId, f.beforeDay ?? null, f.limit],
  );
  return rows.map((r) => ({ day: r.day, usage: r.usage, takenAt: r.taken_at.toISOString() }));
};
