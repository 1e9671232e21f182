import { billingErrors } from '../../domain/billing/errors';
import type { Subscription } from '../../domain/billing/subscription';
import type { Kernel } from '../../infra/kernel';
import type { Usage } from '../../projections/billing/queries';
import { currentSubscription } from '../../projections/billing/queries';
import type { BillingContext } from './context';
import type { PlanInfo } from './limits';
import { loadTenantLimits } from './limits';

export interface TenantUsage {
  tenantId: string;
  subscription: Subscription | null;
  info: PlanInfo;
  usage: Usage;
}

/** RetrieveUsage and GET /billing/usage: the tenant's usage against the limits in force, read fresh; an unknown tenant is not found */
export const tenantUsage = async (kernel: Kernel, ctx: BillingContext, tenantId: string): Promise<TenantUsage> => {
  const subscription = await currentSubscription(kernel.db, tenantId);
  if (!subscription && !(await ctx.tenants.exists(kernel.db, tenantId))) throw billingErrors.tenantNotFound();
  const { info, usage } = await loadTenantLimits(kernel.db, tenantId);
  return { tenantId, subscription, info, usage };
};
