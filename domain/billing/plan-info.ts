import { FREE_PLAN } from './plan';
import type { PlanLimits } from './resources';
import { effectiveLimits } from './resources';
import type { Subscription, SubscriptionStatus } from './subscription';

/** what the gateway and money need to know of a tenant's subscription: its status and the limits in force */
export interface PlanInfo {
  tenantId: string;
  /** none: no subscription yet (a tenant a moment old): treated as a trial of the free plan */
  status: SubscriptionStatus | 'none';
  planId: string;
  /** the limits that apply now (with a downgrade pending, the stricter of both plans) */
  limits: PlanLimits;
}

/** a tenant's plan info from its current subscription and the limits of its plan and pending plan (a plan not found: the free plan's) */
export const planInfoOf = (
  tenantId: string,
  subscription: Subscription | null,
  plan: { limits: PlanLimits } | null,
  pending: { limits: PlanLimits } | null,
): PlanInfo => {
  if (!subscription) return { tenantId, status: 'none', planId: FREE_PLAN.id, limits: FREE_PLAN.limits };
  const limits = effectiveLimits(
    plan?.limits ?? FREE_PLAN.limits,
    subscription.pendingPlanId ? (pending?.limits ?? null) : null,
  );
  return { tenantId, status: subscription.status, planId: subscription.planId, limits };
};
