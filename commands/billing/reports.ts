import { billingErrors } from '../../domain/billing/errors';
import type { PlanInfo } from '../../domain/billing/plan-info';
import type { Subscription } from '../../domain/billing/subscription';
import type { Usage } from '../../domain/billing/usage';
import type { Kernel } from '../../infra/kernel';
import type { BillingContext } from './context';
import { currentSubscription, loadTenantLimits } from './lookups';

export interface TenantUsage {
  tenantId: string;
  subscription: Subscription | null;
  info: PlanInfo;
  usage: Usage;
}

/** RetrieveUsage: the tenant's usage against the limits in force, read fresh; an unknown tenant is not found */
export const tenantUsage = async (kernel: Kernel, ctx: BillingContext, tenantId: string): Promise<TenantUsage> => {
  const subscription = await currentSubscription(kernel.db, tenantId);
  if (!subscription && !(await ctx.tenants.exists(kernel.db, tenantId))) throw billingErrors.tenantNotFound();
  const { info, usage } = await loadTenantLimits(kernel.db, kernel.people, tenantId, kernel.clock.now());
  return { tenantId, subscription, info, usage };
};
