import { moneyErrors } from '../../domain/money/errors';
import type { PlanLimits, SubscriptionStatus } from '../../domain/money/limits';
import { DEFAULT_PLAN_LIMITS } from '../../domain/money/limits';
import type { KeyValueCache } from '../../infra/cache';
import type { Clock } from '../../infra/runtime/clock';

/** Where plan limits come from: billing (over gRPC, once it exists). Throws when billing cannot be reached. */
export interface PlanLimitsSource {
  fetch(tenantId: string): Promise<PlanLimits>;
}

/** until billing exists: the defaults of the rulings, through the same port */
export const defaultPlanLimitsSource: PlanLimitsSource = { fetch: async () => DEFAULT_PLAN_LIMITS };

/** The subscription hook: suspended tenants keep debit, transfer, hold, confirm and cancel. */
export interface SubscriptionSource {
  statusOf(tenantId: string): Promise<SubscriptionStatus>;
}
export const activeSubscriptions: SubscriptionSource = { statusOf: async () => 'active' };

export const planLimitsKey = (tenantId: string): string => `billing:plan_limits:${tenantId}`;

interface CachedLimits {
  maxTxAmount: string;
  maxBalance: string;
  fetchedAt: number;
}

/**
 * Plan limits read through the cache billing:plan_limits:{tenantId} (spec 002 rule 7): a value
 * younger than freshMs is used as is; an older one is refreshed from billing, and kept (stale)
 * while billing is down; with no value at all and billing down the request fails closed with 503
 * billing-unavailable. Entries live keepMs so that a stale value survives an outage.
 */
export class CachedPlanLimits {
  constructor(
    private readonly cache: KeyValueCache,
    private readonly source: PlanLimitsSource,
    private readonly clock: Clock,
    private readonly freshMs = 300_000,
    private readonly keepMs = 7 * 24 * 3600_000,
  ) {}

  async get(tenantId: string): Promise<PlanLimits> {
    const key = planLimitsKey(tenantId);
    const cached = await this.read(key);
    const now = this.clock.now().getTime();
    if (cached && now - cached.fetchedAt < this.freshMs)
      return { maxTxAmount: BigInt(cached.maxTxAmount), maxBalance: BigInt(cached.maxBalance) };
    let limits: PlanLimits;
    try {
      limits = await this.source.fetch(tenantId);
    } catch {
      if (cached) return { maxTxAmount: BigInt(cached.maxTxAmount), maxBalance: BigInt(cached.maxBalance) };
      throw moneyErrors.billingUnavailable();
    }
    const value: CachedLimits = {
      maxTxAmount: limits.maxTxAmount.toString(),
      maxBalance: limits.maxBalance.toString(),
      fetchedAt: now,
    };
    await this.cache.set(key, JSON.stringify(value), this.keepMs).catch(() => undefined);
    return limits;
  }

  /** a missing, unreadable or foreign entry counts as a miss; so does an unreachable cache */
  private async read(key: string): Promise<CachedLimits | null> {
    try {
      const raw = await this.cache.get(key);
      if (!raw) return null;
      const v = JSON.parse(raw) as Partial<CachedLimits>;
      return typeof v.maxTxAmount === 'string' &&
        /^\d+$/.test(v.maxTxAmount) &&
        typeof v.maxBalance === 'string' &&
        /^\d+$/.test(v.maxBalance) &&
        typeof v.fetchedAt === 'number'
        ? (v as CachedLimits)
        : null;
    } catch {
      return null;
    }
  }
}
