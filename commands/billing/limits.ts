import { FREE_PLAN } from '../../domain/billing/plan';
import type { LimitAnswer, PlanLimits, Resource } from '../../domain/billing/resources';
import { checkLimit, effectiveLimits, LIMIT_OF } from '../../domain/billing/resources';
import type { SubscriptionStatus } from '../../domain/billing/subscription';
import type { Queryable } from '../../infra/postgres/db';
import type { Clock } from '../../infra/runtime/clock';
import type { Usage } from '../../projections/billing/queries';
import { currentSubscription, emptyUsage, findPlan, usageOf } from '../../projections/billing/queries';

/** what the gateway and money need to know of a tenant's subscription: its status and the limits in force */
export interface PlanInfo {
  tenantId: string;
  /** none: no subscription yet (a tenant a moment old): treated as a trial of the free plan */
  status: SubscriptionStatus | 'none';
  planId: string;
  /** the limits that apply now (with a downgrade pending, the stricter of both plans) */
  limits: PlanLimits;
}

/** the questions the gateway asks billing: in process, or over gRPC in split deployment */
export interface BillingAnswers {
  planInfo(tenantId: string): Promise<PlanInfo>;
  checkLimit(tenantId: string, resource: Resource): Promise<LimitAnswer>;
}

interface Entry { info: PlanInfo; usage: Usage; loadedAt: number }

/** reads a tenant's plan info and usage from the read models (one subscription, up to two plans, one usage read) */
export const loadTenantLimits = async (q: Queryable, tenantId: string): Promise<{ info: PlanInfo; usage: Usage }> => {
  const [subscription, usage] = await Promise.all([currentSubscription(q, tenantId), usageOf(q, tenantId)]);
  if (!subscription) return { info: { tenantId, status: 'none', planId: FREE_PLAN.id, limits: FREE_PLAN.limits }, usage };
  const [plan, pending] = await Promise.all([findPlan(q, subscription.planId), subscription.pendingPlanId ? findPlan(q, subscription.pendingPlanId) : null]);
  const limits = effectiveLimits(plan?.limits ?? FREE_PLAN.limits, pending?.limits ?? null);
  return { info: { tenantId, status: subscription.status, planId: subscription.planId, limits }, usage };
};

/**
 * CheckLimit's memory (spec 001: answers in under a millisecond): each tenant's limits and usage,
 * loaded from the read models on first use and dropped whenever an event changes them — billing's
 * own events and the usage events of other services, delivered through the log to every process
 * (commands/billing/context.ts installs the handlers), and by billing's own commands in the process
 * that ran them, right after their commit. A short TTL (maxAgeMs) is the safety net for an
 * invalidation lost while the log was unreachable.
 */
export class LimitBook implements BillingAnswers {
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<Entry>>();
  /** bumped by every drop: a load that started before a drop is not kept */
  private generation = 0;

  constructor(private readonly db: Queryable, private readonly clock: Clock, private readonly maxAgeMs = 2_000) {}

  async planInfo(tenantId: string): Promise<PlanInfo> {
    return (await this.entry(tenantId)).info;
  }

  async checkLimit(tenantId: string, resource: Resource): Promise<LimitAnswer> {
    const { info, usage } = await this.entry(tenantId);
    return checkLimit(resource, usage[resource], info.limits[LIMIT_OF[resource]]);
  }

  async usage(tenantId: string): Promise<Usage> {
    return (await this.entry(tenantId)).usage;
  }

  drop(tenantId: string): void {
    this.generation += 1;
    this.entries.delete(tenantId);
    this.loading.delete(tenantId);
  }

  dropAll(): void {
    this.generation += 1;
    this.entries.clear();
    this.loading.clear();
  }

  private entry(tenantId: string): Promise<Entry> | Entry {
    const now = this.clock.now().getTime();
    const known = this.entries.get(tenantId);
    if (known && now - known.loadedAt < this.maxAgeMs && now >= known.loadedAt) return known;
    let pending = this.loading.get(tenantId);
    if (!pending) {
      const generation = this.generation;
      pending = loadTenantLimits(this.db, tenantId).then(({ info, usage }) => {
        const entry = { info, usage: usage ?? emptyUsage(), loadedAt: now };
        if (generation === this.generation) this.entries.set(tenantId, entry);
        return entry;
      }).finally(() => {
        if (this.loading.get(tenantId) === pending) this.loading.delete(tenantId);
      });
      this.loading.set(tenantId, pending);
    }
    return pending;
  }
}
