import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { PlanSnapshot } from '../../domain/billing/plan';
import type { PlanLimits, Resource } from '../../domain/billing/resources';
import { RESOURCES } from '../../domain/billing/resources';
import type { Subscription, SubscriptionStatus } from '../../domain/billing/subscription';
import type { Queryable } from '../../infra/postgres/db';

/**
 * Typed reads of billing's read models. Plans are the platform's (they live in the platform
 * tenant); subscriptions and usage are filtered by the tenant the caller may see.
 */
interface PlanRow {
  id: string; name: string; description: string; price_cents: string; currency: string; limits: PlanLimits; features: string[]; is_active: boolean;
  created_at: Date; updated_at: Date;
}
const PLAN_COLUMNS = 'id, name, description, price_cents::text, currency, limits, features, is_active, created_at, updated_at';

export const planOf = (r: PlanRow): PlanSnapshot => ({
  id: r.id, name: r.name, description: r.description, priceCents: Number(r.price_cents), currency: r.currency, limits: r.limits, features: r.features,
  isActive: r.is_active, createdAt: r.created_at.toISOString(), updatedAt: r.updated_at.toISOString(),
});

export const findPlan = async (q: Queryable, id: string): Promise<PlanSnapshot | null> => {
  const { rows } = await q.query<PlanRow>(`SELECT ${PLAN_COLUMNS} FROM rm.billing_plans WHERE tenant_id = $1 AND id = $2`, [PLATFORM_TENANT_ID, id]);
  return rows[0] ? planOf(rows[0]) : null;
};

export const findPlanByName = async (q: Queryable, name: string): Promise<PlanSnapshot | null> => {
  const { rows } = await q.query<PlanRow>(`SELECT ${PLAN_COLUMNS} FROM rm.billing_plans WHERE tenant_id = $1 AND lower(name) = lower($2)`, [PLATFORM_TENANT_ID, name]);
  return rows[0] ? planOf(rows[0]) : null;
};

/** by id, active ones only unless includeInactive; keyset on id */
export const listPlans = async (q: Queryable, f: { includeInactive: boolean; afterId?: string; limit: number }): Promise<PlanSnapshot[]> => {
  const { rows } = await q.query<PlanRow>(
    `SELECT ${PLAN_COLUMNS} FROM rm.billing_plans WHERE tenant_id = $1 AND id > $2 AND ($3 OR is_active) ORDER BY id LIMIT $4`,
    [PLATFORM_TENANT_ID, f.afterId ?? '', f.includeInactive, f.limit]);
  return rows.map(planOf);
};

export const hasActiveSubscribers = async (q: Queryable, planId: string): Promise<boolean> =>
  ((await q.query(`SELECT 1 FROM rm.billing_subscriptions WHERE (plan_id = $1 OR pending_plan_id = $1) AND status IN ('trialing', 'active', 'past_due', 'suspended') LIMIT 1`, [planId])).rowCount ?? 0) > 0;

interface SubscriptionRow { snapshot: Subscription }

export const findSubscription = async (q: Queryable, id: string, tenantId?: string): Promise<Subscription | null> => {
  const { rows } = tenantId === undefined
    ? await q.query<SubscriptionRow>('SELECT snapshot FROM rm.billing_subscriptions WHERE id = $1', [id])
    : await q.query<SubscriptionRow>('SELECT snapshot FROM rm.billing_subscriptions WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  return rows[0]?.snapshot ?? null;
};

/** the tenant's current subscription: its newest */
export const currentSubscription = async (q: Queryable, tenantId: string): Promise<Subscription | null> => {
  const { rows } = await q.query<SubscriptionRow>('SELECT snapshot FROM rm.billing_subscriptions WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1', [tenantId]);
  return rows[0]?.snapshot ?? null;
};

export const subscriptionByExternalId = async (q: Queryable, externalId: string): Promise<Subscription | null> => {
  const { rows } = await q.query<SubscriptionRow>('SELECT snapshot FROM rm.billing_subscriptions WHERE external_id = $1 ORDER BY created_at DESC LIMIT 1', [externalId]);
  return rows[0]?.snapshot ?? null;
};

/** keyset on id; tenantId and status filter when given */
export const listSubscriptions = async (q: Queryable, f: { tenantId?: string; status?: SubscriptionStatus; afterId?: string; limit: number }): Promise<Subscription[]> => {
  const params: unknown[] = [f.afterId ?? '', f.limit];
  let where = 'id > $1';
  if (f.tenantId !== undefined) { params.push(f.tenantId); where += ` AND tenant_id = $${params.length}`; }
  if (f.status !== undefined) { params.push(f.status); where += ` AND status = $${params.length}`; }
  const { rows } = await q.query<SubscriptionRow>(`SELECT snapshot FROM rm.billing_subscriptions WHERE ${where} ORDER BY id LIMIT $2`, params);
  return rows.map((r) => r.snapshot);
};

export type Usage = Record<Resource, number>;

export const emptyUsage = (): Usage => Object.fromEntries(RESOURCES.map((r) => [r, 0])) as Usage;

export const usageOf = async (q: Queryable, tenantId: string): Promise<Usage> => {
  const { rows } = await q.query<{ resource: string; used: string }>('SELECT resource, used::text FROM rm.billing_usage WHERE tenant_id = $1', [tenantId]);
  const usage = emptyUsage();
  for (const r of rows) if ((RESOURCES as readonly string[]).includes(r.resource)) usage[r.resource as Resource] = Number(r.used);
  return usage;
};

export interface UsageSnapshotRow { day: string; usage: Partial<Usage>; takenAt: string }

/** newest day first; keyset on the day */
export const usageHistory = async (q: Queryable, tenantId: string, f: { beforeDay?: string; limit: number }): Promise<UsageSnapshotRow[]> => {
  const { rows } = await q.query<{ day: string; usage: Partial<Usage>; taken_at: Date }>(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, usage, taken_at FROM billing.usage_snapshots WHERE tenant_id = $1 AND ($2::date IS NULL OR day < $2::date)
     ORDER BY day DESC LIMIT $3`, [tenantId, f.beforeDay ?? null, f.limit]);
  return rows.map((r) => ({ day: r.day, usage: r.usage, takenAt: r.taken_at.toISOString() }));
};
