import { z } from 'zod';
import type { PlanSnapshot } from './plan';
import type { PlanLimits } from './resources';
import { percentageOf } from './resources';
import type { Subscription } from './subscription';
import { STATUSES, TERMINATION_PHASES } from './subscription';

/** REST representations (spec 001, REST representations): camelCase, limits 0 = unlimited */
const Count = z.number().int().min(0);
export const LimitsView = z
  .object({
    users: Count,
    records: Count,
    storageBytes: Count,
    eventsPerDay: Count,
    modules: Count,
    featureFlags: Count,
    customDomains: Count,
    includedSubtenants: Count,
    requestsPerMinute: Count,
    moneyMaxTransaction: Count,
    moneyMaxBalance: Count,
  })
  .describe('limits of the plan; 0 means unlimited');

export const PlanView = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  interval: z.literal('monthly'),
  price: Count.describe('monthly price in minor units'),
  currency: z.string(),
  limits: LimitsView,
  features: z.array(z.string()),
  isActive: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type PlanView = z.infer<typeof PlanView>;

export const planView = (p: PlanSnapshot): PlanView => ({
  id: p.id,
  name: p.name,
  description: p.description,
  interval: 'monthly',
  price: p.priceCents,
  currency: p.currency,
  limits: { ...p.limits },
  features: p.features,
  isActive: p.isActive,
  createdAt: p.createdAt,
  updatedAt: p.updatedAt,
});

export const SubscriptionView = z.object({
  id: z.string(),
  tenantId: z.string(),
  planId: z.string(),
  status: z.enum(STATUSES),
  version: z.number().int(),
  trialEndsAt: z.string().nullable(),
  currentPeriodStart: z.string(),
  currentPeriodEnd: z.string(),
  cancelAtPeriodEnd: z.boolean(),
  canceledAt: z.string().nullable(),
  pendingChange: z
    .object({ planId: z.string(), effectiveAt: z.string() })
    .nullable()
    .describe('a downgrade waiting for the end of the period'),
  externalId: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type SubscriptionView = z.infer<typeof SubscriptionView>;

export const subscriptionView = (s: Subscription): SubscriptionView => ({
  id: s.id,
  tenantId: s.tenantId,
  planId: s.planId,
  status: s.status,
  version: s.version,
  trialEndsAt: s.trialEnd,
  currentPeriodStart: s.currentPeriodStart,
  currentPeriodEnd: s.currentPeriodEnd,
  cancelAtPeriodEnd: s.cancelAtPeriodEnd,
  canceledAt: s.canceledAt,
  pendingChange: s.pendingPlanId && s.downgradeAt ? { planId: s.pendingPlanId, effectiveAt: s.downgradeAt } : null,
  externalId: s.externalId,
  createdAt: s.createdAt,
  updatedAt: s.updatedAt,
});

const UsageCounts = z.object({
  users: Count,
  records: Count,
  storageBytes: Count,
  eventsPerDay: Count,
  modules: Count,
  featureFlags: Count,
  customDomains: Count,
});
export const UsageView = z.object({
  tenantId: z.string(),
  period: z.string().describe('year-month of the current billing period, e.g. 2026-11'),
  periodStart: z.string().nullable(),
  periodEnd: z.string().nullable(),
  usage: UsageCounts,
  limits: UsageCounts.describe('0 means unlimited'),
  percentage: z.record(z.string(), z.number()).describe('used / limit in percent, -1 when unlimited'),
});
export type UsageView = z.infer<typeof UsageView>;

export interface UsageCountsInput {
  users: number;
  records: number;
  storage_bytes: number;
  events_per_day: number;
  modules: number;
  feature_flags: number;
  custom_domains: number;
}

export const countsView = (u: Partial<UsageCountsInput>) => ({
  users: u.users ?? 0,
  records: u.records ?? 0,
  storageBytes: u.storage_bytes ?? 0,
  eventsPerDay: u.events_per_day ?? 0,
  modules: u.modules ?? 0,
  featureFlags: u.feature_flags ?? 0,
  customDomains: u.custom_domains ?? 0,
});

export const usageView = (
  tenantId: string,
  s: Subscription | null,
  usage: UsageCountsInput,
  limits: PlanLimits,
  now: string,
): UsageView => {
  const counts = countsView(usage);
  const caps = {
    users: limits.users,
    records: limits.records,
    storageBytes: limits.storageBytes,
    eventsPerDay: limits.eventsPerDay,
    modules: limits.modules,
    featureFlags: limits.featureFlags,
    customDomains: limits.customDomains,
  };
  return {
    tenantId,
    period: (s?.currentPeriodStart ?? now).slice(0, 7),
    periodStart: s?.currentPeriodStart ?? null,
    periodEnd: s?.currentPeriodEnd ?? null,
    usage: counts,
    limits: caps,
    percentage: Object.fromEntries(
      Object.entries(counts).map(([k, used]) => [k, percentageOf(used, caps[k as keyof typeof caps])]),
    ),
  };
};

export const UsageSnapshotView = z.object({ day: z.string(), usage: UsageCounts, takenAt: z.string() });

export const TerminationStatusView = z.object({
  tenantId: z.string(),
  status: z.enum(STATUSES).or(z.literal('none')),
  phase: z.enum(TERMINATION_PHASES).nullable(),
  startedAt: z.string().nullable(),
});
