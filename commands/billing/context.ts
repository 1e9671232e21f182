import { USAGE_EVENT_TYPES, usageTenantOf } from '../../domain/billing/usage';
import { CacheEpochs } from '../../infra/cache/epochs';
import type { Kernel } from '../../infra/kernel';
import type { Clock, IdGenerator } from '../../infra/runtime/clock';
import { planLimitsKey } from '../money/plan-limits';
import { EVERY_PLAN, LimitBook } from './limits';
import type { TenantDirectory } from './lookups';
import { loadTenantLimits, tenantDirectory, tenantsOfPlan } from './lookups';
import { WebhookIntake } from './intake';
import type { NoticePort } from './notices';
import { platformNotices } from './notices';
import type { BillingSettings } from './settings';
import { billingSettingsOf } from './settings';

/** what billing's handlers, routes and workers need beyond the unit of work */
export interface BillingContext {
  settings: BillingSettings;
  book: LimitBook;
  tenants: TenantDirectory;
  notices: NoticePort;
  /** verified webhooks stored durably, deliveries arriving together in one commit */
  intake: WebhookIntake;
  clock: Clock;
  ids: IdGenerator;
  /**
   * the epochs of billing's answers, per tenant and EVERY_PLAN (in the process's cache engine:
   * Redis when configured, so every process sees them): cached answers are served only while unchanged
   */
  epochs: CacheEpochs;
  /** after a committed change of the tenant's subscription (or every tenant's, for a plan): fresh answers on the next request in every process */
  changed(tenantId: string | null): Promise<void>;
  /** after a committed change of a tenant's usage: fresh answers as for `changed`; money's limits (the plan's) stay */
  usageChanged(tenantId: string): Promise<void>;
}

export interface BillingOverrides {
  settings?: Partial<BillingSettings>;
  tenants?: TenantDirectory;
  notices?: NoticePort;
}

const contexts = new WeakMap<Kernel, BillingContext>();

/** how long a shared entry may live without a change: the safety net for a bump Redis missed */
const SHARED_LIMITS_TTL_MS = 60_000;

/** money's cache entry of a tenant's plan limits (docs/decisions.md, "Money plan-limit cache"): written fresh by billing */
const writeMoneyLimits = async (kernel: Kernel, tenantId: string): Promise<void> => {
  const { info } = await loadTenantLimits(kernel.db, kernel.people, tenantId, kernel.clock.now());
  const value = {
    maxTxAmount: String(info.limits.moneyMaxTransaction),
    maxBalance: String(info.limits.moneyMaxBalance),
    fetchedAt: kernel.clock.now().getTime(),
  };
  await kernel.engines.cache.set(planLimitsKey(tenantId), JSON.stringify(value), 7 * 24 * 3600_000);
};

/** money's entries of every tenant of a plan are dropped: money asks billing again on its next movement */
const dropMoneyLimitsOfPlan = async (kernel: Kernel, planId: string): Promise<void> => {
  for (const tenantId of await tenantsOfPlan(kernel.db, planId))
    await kernel.engines.cache.del(planLimitsKey(tenantId));
};

export const configureBilling = (kernel: Kernel, overrides: BillingOverrides = {}): BillingContext => {
  const settings = { ...billingSettingsOf(kernel.config), ...overrides.settings };
  const cache = kernel.engines.cache;
  // shared by billing's processes through Redis when it is configured (an in-process cache would only duplicate the book)
  const epochs = new CacheEpochs(cache, 'billing-limits');
  const shared = cache.kind === 'redis' ? { cache, epochs, ttlMs: SHARED_LIMITS_TTL_MS } : null;
  const book = new LimitBook(kernel.db, kernel.people, kernel.clock, 2_000, shared);
  const usageChanged = async (tenantId: string | null) => {
    await book.changed(tenantId);
    // the book bumps the shared epochs; without Redis they live in this process's cache engine, bumped here
    if (!shared) await epochs.bump([tenantId ?? EVERY_PLAN]).catch(() => undefined);
  };
  const context: BillingContext = {
    settings,
    book,
    tenants: overrides.tenants ?? tenantDirectory(kernel.people),
    notices: overrides.notices ?? platformNotices(() => kernel.notifications),
    intake: new WebhookIntake(kernel.db),
    clock: kernel.clock,
    ids: kernel.ids,
    epochs,
    changed: async (tenantId) => {
      await usageChanged(tenantId);
      if (tenantId !== null && settings.enabled) await writeMoneyLimits(kernel, tenantId);
    },
    usageChanged,
  };
  contexts.set(kernel, context);
  // every process learns of changes made elsewhere through the log (DESIGN.md mechanism 8)
  kernel.invalidations.on(['billing.subscription.changed'], async (event) => {
    await book.changed(event.tenantId);
    if (settings.enabled) await writeMoneyLimits(kernel, event.tenantId);
  });
  kernel.invalidations.on(['billing.plan.changed'], async (event) => {
    await book.changed(null);
    if (settings.enabled && event.payload.limitsChanged)
      await dropMoneyLimitsOfPlan(kernel, String(event.payload.planId));
  });
  kernel.invalidations.on(USAGE_EVENT_TYPES, (event) =>
    book.changed(usageTenantOf(event.type, event.tenantId, event.payload)),
  );
  return context;
};

export const billingContext = (kernel: Kernel): BillingContext => contexts.get(kernel) ?? configureBilling(kernel);
