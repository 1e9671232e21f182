import { z } from 'zod';
import type { Decider } from '../shared/decider';
import { assertNever } from '../shared/decider';
import { billingErrors } from './errors';
import type { PlanLimits } from './resources';
import { LIMIT_KEYS } from './resources';

const Count = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
export const PlanLimitsSchema = z.object(
  Object.fromEntries(LIMIT_KEYS.map((k) => [k, Count])) as Record<keyof PlanLimits, typeof Count>,
);

/**
 * The payment providers' price ids that stand for the plan (Stripe `price_…`, Paddle `pri_…`): a
 * provider's subscription.updated names the price the customer now pays, and this is how billing
 * knows which plan that is (docs/decisions.md). A price id names one plan at most.
 */
export const ProviderPriceIds = z.object({ stripe: z.array(z.string()), paddle: z.array(z.string()) });
export type ProviderPriceIds = z.infer<typeof ProviderPriceIds>;
export const NO_PRICE_IDS: ProviderPriceIds = { stripe: [], paddle: [] };

export const PlanSnapshot = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  priceCents: Count,
  currency: z.string(),
  limits: PlanLimitsSchema,
  features: z.array(z.string()),
  // plans created before price ids existed have none
  providerPriceIds: ProviderPriceIds.default(NO_PRICE_IDS),
  isActive: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type PlanSnapshot = z.infer<typeof PlanSnapshot>;

/**
 * One event type per plan change, as spec 001 names it: billing.plan.changed carries the whole
 * plan after the change (created or updated), so a consumer (the gateway) needs nothing else.
 */
export const PlanChanged = z.object({
  type: z.literal('billing.plan.changed'),
  data: z.object({
    change: z.enum(['created', 'updated']),
    planId: z.string(),
    plan: PlanSnapshot,
    limitsChanged: z.boolean(),
  }),
});
export const PlanEvent = z.discriminatedUnion('type', [PlanChanged]);
export type PlanEvent = z.infer<typeof PlanEvent>;

export type Plan = { status: 'none' } | ({ status: 'exists' } & PlanSnapshot);

export interface PlanPatch {
  name?: string;
  description?: string;
  priceCents?: number;
  isActive?: boolean;
  /** replaces every limit when present */
  limits?: PlanLimits;
  /** replaces the whole list when present */
  features?: string[];
  /** replaces both lists when present */
  providerPriceIds?: ProviderPriceIds;
}

export type PlanCommand =
  | { type: 'CreatePlan'; plan: Omit<PlanSnapshot, 'isActive' | 'createdAt' | 'updatedAt'>; now: string }
  /** the seeded free plan: created once, never changed by a later start */
  | { type: 'SeedPlan'; plan: Omit<PlanSnapshot, 'isActive' | 'createdAt' | 'updatedAt'>; now: string }
  | { type: 'UpdatePlan'; patch: PlanPatch; now: string; hasActiveSubscribers: boolean };

const sameLimits = (a: PlanLimits, b: PlanLimits): boolean => LIMIT_KEYS.every((k) => a[k] === b[k]);

const snapshotOf = (s: Extract<Plan, { status: 'exists' }>): PlanSnapshot => {
  const { status: _status, ...snapshot } = s;
  // a state stored before price ids existed lacks them
  return { ...snapshot, providerPriceIds: (snapshot as Partial<PlanSnapshot>).providerPriceIds ?? NO_PRICE_IDS };
};

export const planDecider: Decider<Plan, PlanCommand, PlanEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve: (_s, e) => {
    switch (e.type) {
      case 'billing.plan.changed':
        return { status: 'exists', ...e.data.plan };
      default:
        return assertNever(e.type);
    }
  },
  decide: (c, s) => {
    switch (c.type) {
      case 'SeedPlan':
      case 'CreatePlan': {
        if (s.status === 'exists' && c.type === 'SeedPlan') return [];
        if (s.status === 'exists') throw billingErrors.planNameTaken(s.name);
        const plan: PlanSnapshot = { ...c.plan, isActive: true, createdAt: c.now, updatedAt: c.now };
        return [
          { type: 'billing.plan.changed', data: { change: 'created', planId: plan.id, plan, limitsChanged: true } },
        ];
      }
      case 'UpdatePlan': {
        if (s.status !== 'exists') throw billingErrors.planNotFound();
        const before = snapshotOf(s);
        const p = c.patch;
        if (p.isActive === false && before.isActive && c.hasActiveSubscribers) throw billingErrors.planHasSubscribers();
        const after: PlanSnapshot = {
          ...before,
          ...(p.name !== undefined ? { name: p.name } : {}),
          ...(p.description !== undefined ? { description: p.description } : {}),
          ...(p.priceCents !== undefined ? { priceCents: p.priceCents } : {}),
          ...(p.isActive !== undefined ? { isActive: p.isActive } : {}),
          ...(p.limits !== undefined ? { limits: p.limits } : {}),
          ...(p.features !== undefined ? { features: [...p.features] } : {}),
          ...(p.providerPriceIds !== undefined ? { providerPriceIds: p.providerPriceIds } : {}),
        };
        if (JSON.stringify({ ...after, updatedAt: '' }) === JSON.stringify({ ...before, updatedAt: '' })) return [];
        after.updatedAt = c.now;
        return [
          {
            type: 'billing.plan.changed',
            data: {
              change: 'updated',
              planId: after.id,
              plan: after,
              limitsChanged: !sameLimits(before.limits, after.limits),
            },
          },
        ];
      }
      default:
        return assertNever(c);
    }
  },
};

/** the plan every new tenant starts on (spec 001: "default plan is the free plan"); a fixed id, seeded at start */
export const FREE_PLAN_ID = '01900000-0000-7000-8000-000000000001';
export const FREE_PLAN = {
  id: FREE_PLAN_ID,
  name: 'free',
  description: 'The free plan every tenant starts on',
  priceCents: 0,
  currency: 'USD',
  features: [] as string[],
  providerPriceIds: NO_PRICE_IDS,
  limits: {
    users: 5,
    records: 10_000,
    storageBytes: 1_073_741_824,
    eventsPerDay: 10_000,
    modules: 3,
    featureFlags: 10,
    customDomains: 1,
    includedSubtenants: 0,
    requestsPerMinute: 0,
    moneyMaxTransaction: 10_000_000,
    moneyMaxBalance: 100_000_000,
  } satisfies PlanLimits,
};

/** a plan as billing's read model stores it (rm.billing_plans; price as text, times as dates) */
export interface PlanRow {
  id: string;
  name: string;
  description: string;
  price_cents: string;
  currency: string;
  limits: PlanLimits;
  features: string[];
  provider_price_ids: ProviderPriceIds | null;
  is_active: boolean;
  created_at: Date;
  updated_at: Date;
}

export const planFromRow = (r: PlanRow): PlanSnapshot => ({
  id: r.id,
  name: r.name,
  description: r.description,
  priceCents: Number(r.price_cents),
  currency: r.currency,
  limits: r.limits,
  features: r.features,
  providerPriceIds: r.provider_price_ids ?? NO_PRICE_IDS,
  isActive: r.is_active,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});
