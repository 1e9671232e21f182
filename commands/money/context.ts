import type { Kernel } from '../../infra/kernel';
import type { Clock, IdGenerator } from '../../infra/runtime/clock';
import type { MemberDirectory } from './lookups';
import type { PlanLimitsSource, SubscriptionSource } from './plan-limits';
import { activeSubscriptions, CachedPlanLimits, defaultPlanLimitsSource } from './plan-limits';
import type { MoneySettings } from './settings';
import { loadMoneySettings } from './settings';

/** what the money handlers need beyond the unit of work: settings, the two billing ports, identity's members, time and ids */
export interface MoneyContext {
  settings: MoneySettings;
  limits: CachedPlanLimits;
  subscriptions: SubscriptionSource;
  members: MemberDirectory;
  clock: Clock;
  ids: IdGenerator;
}

export interface MoneyOverrides {
  settings?: Partial<MoneySettings>;
  limitsSource?: PlanLimitsSource;
  subscriptions?: SubscriptionSource;
  members?: MemberDirectory;
}

const contexts = new WeakMap<Kernel, MoneyContext>();

/**
 * Billing's answers for money, installed by billing when it is deployed (write-api/billing start):
 * the plan limits and the subscription status. Read per call, so the order in which services
 * start does not matter; until installed, the rulings' defaults and an active subscription.
 */
export interface MoneyBillingPorts {
  limitsSource: PlanLimitsSource;
  subscriptions: SubscriptionSource;
}
const billingPorts = new WeakMap<Kernel, MoneyBillingPorts>();
export const installMoneyBillingPorts = (kernel: Kernel, ports: MoneyBillingPorts): void => {
  billingPorts.set(kernel, ports);
};
const fromBilling = (kernel: Kernel): { limitsSource: PlanLimitsSource; subscriptions: SubscriptionSource } => ({
  limitsSource: {
    fetch: (tenantId) => (billingPorts.get(kernel)?.limitsSource ?? defaultPlanLimitsSource).fetch(tenantId),
  },
  subscriptions: {
    statusOf: (tenantId) => (billingPorts.get(kernel)?.subscriptions ?? activeSubscriptions).statusOf(tenantId),
  },
});

/** installs the ports; tests pass fakes (billing's answers come through installMoneyBillingPorts) */
export const configureMoney = (kernel: Kernel, overrides: MoneyOverrides = {}): MoneyContext => {
  const settings = { ...loadMoneySettings(kernel.config.env), ...overrides.settings };
  const billing = fromBilling(kernel);
  const context: MoneyContext = {
    settings,
    limits: new CachedPlanLimits(
      kernel.engines.cache,
      overrides.limitsSource ?? billing.limitsSource,
      kernel.clock,
      settings.planLimitsFreshMs,
    ),
    subscriptions: overrides.subscriptions ?? billing.subscriptions,
    members: overrides.members ?? kernel.people,
    clock: kernel.clock,
    ids: kernel.ids,
  };
  contexts.set(kernel, context);
  return context;
};

export const moneyContext = (kernel: Kernel): MoneyContext => contexts.get(kernel) ?? configureMoney(kernel);
