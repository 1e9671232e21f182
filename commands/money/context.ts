import type { Kernel } from '../../infra/kernel';
import type { Clock, IdGenerator } from '../../infra/runtime/clock';
import type { MemberDirectory } from './lookups';
import { identityMembers } from './lookups';
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

/** installs the ports (billing will pass its gRPC client here); tests pass fakes */
export const configureMoney = (kernel: Kernel, overrides: MoneyOverrides = {}): MoneyContext => {
  const settings = { ...loadMoneySettings(kernel.config.env), ...overrides.settings };
  const context: MoneyContext = {
    settings,
    limits: new CachedPlanLimits(kernel.engines.cache, overrides.limitsSource ?? defaultPlanLimitsSource, kernel.clock, settings.planLimitsFreshMs),
    subscriptions: overrides.subscriptions ?? activeSubscriptions,
    members: overrides.members ?? identityMembers,
    clock: kernel.clock,
    ids: kernel.ids,
  };
  contexts.set(kernel, context);
  return context;
};

export const moneyContext = (kernel: Kernel): MoneyContext => contexts.get(kernel) ?? configureMoney(kernel);
