import type { PlanRow, PlanSnapshot } from '../../domain/billing/plan';
import { planFromRow } from '../../domain/billing/plan';
import type { Subscription, SubscriptionStatus } from '../../domain/billing/subscription';
import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { People } from '../../infra/people';
import type { Queryable } from '../../infra/postgres/db';
import { PLAN_COLUMNS } from '../../projections/billing/queries';

/**
 * What billing's commands, workers and gRPC service read of read models — billing's own
 * (rm.billing_*), and identity's through the directory of people (kernel.people). What the read
 * API reads too is the read side's query (projections/billing/queries.ts), re-exported here; the
 * rest only the command side asks. Plans are the platform's (they live in the platform tenant).
 */
export {
  currentSubscription,
  eventsPublishedToday,
  findPlan,
  findSubscription,
  loadTenantLimits,
  usageOf,
} from '../../projections/billing/queries';

export const findPlanByName = async (q: Queryable, name: string): Promise<PlanSnapshot | null> => {
  const { rows } = await q.query<PlanRow>(
    `SELECT ${PLAN_COLUMNS} FROM rm.billing_plans WHERE tenant_id = $1 AND lower(name) = lower($2)`,
    [PLATFORM_TENANT_ID, name],
  );
  return rows[0] ? planFromRow(rows[0]) : null;
};

/**
 * The plans that list any of these price ids of the provider, with the ids each lists (a few
 * plans: the platform's catalog, read without an index).
 */
export const plansByProviderPrices = async (
  q: Queryable,
  provider: 'stripe' | 'paddle',
  priceIds: string[],
): Promise<PlanSnapshot[]> => {
  if (priceIds.length === 0) return [];
  const { rows } = await q.query<PlanRow>(
    `SELECT ${PLAN_COLUMNS} FROM rm.billing_plans WHERE tenant_id = $1 AND provider_price_ids -> $2::text ?| $3::text[] ORDER BY id`,
    [PLATFORM_TENANT_ID, provider, priceIds],
  );
  return rows.map(planFromRow);
};

/** by id, active ones only unless includeInactive; keyset on id (ListPlans) */
export const listPlans = async (
  q: Queryable,
  f: { includeInactive: boolean; afterId?: string; limit: number },
): Promise<PlanSnapshot[]> => {
  const { rows } = await q.query<PlanRow>(
    `SELECT ${PLAN_COLUMNS} FROM rm.billing_plans WHERE tenant_id = $1 AND id > $2 AND ($3 OR is_active) ORDER BY id LIMIT $4`,
    [PLATFORM_TENANT_ID, f.afterId ?? '', f.includeInactive, f.limit],
  );
  return rows.map(planFromRow);
};

export const hasActiveSubscribers = async (q: Queryable, planId: string): Promise<boolean> =>
  ((
    await q.query(
      `SELECT 1 FROM rm.billing_subscriptions WHERE (plan_id = $1 OR pending_plan_id = $1) AND status IN ('trialing', 'active', 'past_due', 'suspended') LIMIT 1`,
      [planId],
    )
  ).rowCount ?? 0) > 0;

/** the tenants on a plan now or after a pending downgrade */
export const tenantsOfPlan = async (q: Queryable, planId: string): Promise<string[]> =>
  (
    await q.query<{ tenant_id: string }>(
      'SELECT DISTINCT tenant_id FROM rm.billing_subscriptions WHERE plan_id = $1 OR pending_plan_id = $1',
      [planId],
    )
  ).rows.map((r) => r.tenant_id);

/**
 * The tenant a payment provider's subscription id is bound to (rm.billing_external_ids, unique
 * across tenants): deliberately not filtered by tenant — the id is one across tenants, which is
 * what keeps one tenant from claiming another's payments.
 */
export const externalIdHolder = async (q: Queryable, externalId: string): Promise<string | null> => {
  const { rows } = await q.query<{ tenant_id: string }>(
    'SELECT tenant_id FROM rm.billing_external_ids WHERE external_id = $1',
    [externalId],
  );
  return rows[0]?.tenant_id ?? null;
};

/** keyset on id; tenantId and status filter when given (ListSubscriptions: the platform's services see every tenant) */
export const listSubscriptions = async (
  q: Queryable,
  f: { tenantId?: string; status?: SubscriptionStatus; afterId?: string; limit: number },
): Promise<Subscription[]> => {
  const params: unknown[] = [f.afterId ?? '', f.limit];
  let where = 'id > $1';
  if (f.tenantId !== undefined) {
    params.push(f.tenantId);
    where += ` AND tenant_id = $${params.length}`;
  }
  if (f.status !== undefined) {
    params.push(f.status);
    where += ` AND status = $${params.length}`;
  }
  const { rows } = await q.query<{ snapshot: Subscription }>(
    `SELECT snapshot FROM rm.billing_subscriptions WHERE ${where} ORDER BY id LIMIT $2`,
    params,
  );
  return rows.map((r) => r.snapshot);
};

/**
 * What billing needs to know about tenants, from the directory of people (identity's tenants and
 * accounts, never its streams): a port, so a test may install another.
 */
export interface TenantDirectory {
  exists(q: Queryable, tenantId: string): Promise<boolean>;
  /** tenants that have no subscription yet (those created before billing was deployed), oldest first */
  withoutSubscription(q: Queryable, limit: number): Promise<{ tenantId: string; createdAt: Date }[]>;
  /** where the tenant's notices go: its owner's email; null when unknown */
  noticeRecipient(q: Queryable, tenantId: string): Promise<string | null>;
}

/** the directory's customer tenants: the platform pseudo-tenant is no customer and has no subscription */
export const tenantDirectory = (people: People): TenantDirectory => ({
  exists: async (q, tenantId) => tenantId !== PLATFORM_TENANT_ID && (await people.tenantExists(q, tenantId)),
  // the directory's tenants oldest first, a page at a time, less those billing has a subscription of
  withoutSubscription: async (q, limit) => {
    const missing: { tenantId: string; createdAt: Date }[] = [];
    let after: { tenantId: string; createdAt: Date } | null = null;
    while (missing.length < limit) {
      const page = await people.tenants(q, after, limit);
      if (page.length === 0) break;
      const { rows } = await q.query<{ tenant_id: string }>(
        'SELECT DISTINCT tenant_id FROM rm.billing_subscriptions WHERE tenant_id = ANY($1::text[])',
        [page.map((t) => t.tenantId)],
      );
      const subscribed = new Set(rows.map((r) => r.tenant_id));
      missing.push(...page.filter((t) => !subscribed.has(t.tenantId)));
      after = page.length < limit ? null : (page.at(-1) ?? null);
      if (!after) break;
    }
    return missing.slice(0, limit);
  },
  noticeRecipient: async (q, tenantId) => people.ownerAddress(q, tenantId),
});
