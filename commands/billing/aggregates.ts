import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { Plan } from '../../domain/billing/plan';
import { PlanEvent, planDecider } from '../../domain/billing/plan';
import type { TenantBilling } from '../../domain/billing/subscription';
import { SubscriptionEvent, subscriptionDecider } from '../../domain/billing/subscription';
import { streamIdOf } from '../../domain/shared/event';
import { defineAggregate } from '../../infra/eventstore/aggregate';

export const PlanAggregate = defineAggregate({
  name: 'billing.plan',
  decider: planDecider,
  stateSchema: 'billing.plan.v1',
  decode: (json): Plan => json as Plan,
  toEvent: (e) => PlanEvent.parse(e),
});

/** a tenant's billing: one stream per tenant holding its current subscription */
export const SubscriptionAggregate = defineAggregate({
  name: 'billing.subscription',
  decider: subscriptionDecider,
  stateSchema: 'billing.subscription.v1',
  decode: (json): TenantBilling => json as TenantBilling,
  toEvent: (e) => SubscriptionEvent.parse(e),
});

/** plans are the platform's: they live in the platform tenant */
export const planStream = (planId: string): string => streamIdOf('billing.plan', PLATFORM_TENANT_ID, planId);
export const subscriptionStream = (tenantId: string): string => streamIdOf('billing.subscription', tenantId, tenantId);
