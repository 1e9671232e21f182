/**
 * The resources a plan limits and billing counts (spec 001 ResourceType, PlanLimits). Limits are
 * whole numbers where 0 means unlimited; kept as JS numbers (at most 2^53 − 1: 9 PB of storage,
 * 90 trillion dollars in cents), larger values are refused where they enter.
 */
export const RESOURCES = [
  'users',
  'records',
  'storage_bytes',
  'events_per_day',
  'modules',
  'feature_flags',
  'custom_domains',
] as const;
export type Resource = (typeof RESOURCES)[number];

export const isResource = (value: string): value is Resource => (RESOURCES as readonly string[]).includes(value);

/** the limits of a plan: the spec's PlanLimits, plus the gateway's tenant rate ceiling and money's two limits (docs/decisions.md) */
export interface PlanLimits {
  users: number;
  records: number;
  storageBytes: number;
  eventsPerDay: number;
  modules: number;
  featureFlags: number;
  customDomains: number;
  includedSubtenants: number;
  /** requests per minute for the tenant as a whole at the gateway; 0 = RATE_LIMIT_TENANT_PER_MIN */
  requestsPerMinute: number;
  /** money: largest single transaction in cents; 0 = unlimited */
  moneyMaxTransaction: number;
  /** money: largest wallet balance in cents; 0 = unlimited */
  moneyMaxBalance: number;
}

export const LIMIT_KEYS = [
  'users',
  'records',
  'storageBytes',
  'eventsPerDay',
  'modules',
  'featureFlags',
  'customDomains',
  'includedSubtenants',
  'requestsPerMinute',
  'moneyMaxTransaction',
  'moneyMaxBalance',
] as const satisfies readonly (keyof PlanLimits)[];

/** the limit key of a counted resource */
export const LIMIT_OF: Record<Resource, keyof PlanLimits> = {
  users: 'users',
  records: 'records',
  storage_bytes: 'storageBytes',
  events_per_day: 'eventsPerDay',
  modules: 'modules',
  feature_flags: 'featureFlags',
  custom_domains: 'customDomains',
};

/** 0 means unlimited: as a ceiling it is above every number */
const ceiling = (limit: number): number => (limit === 0 ? Number.POSITIVE_INFINITY : limit);

/** the stricter of two limits (0 = unlimited) */
export const stricter = (a: number, b: number): number => (ceiling(a) <= ceiling(b) ? a : b);

/**
 * A move from `from` to `to` is a downgrade when any limit of `to` is lower (an unlimited one
 * becoming limited included): it then waits for the period boundary (spec 001 rule 1).
 */
export const isDowngrade = (from: PlanLimits, to: PlanLimits): boolean =>
  LIMIT_KEYS.some((k) => ceiling(to[k]) < ceiling(from[k]));

/** the limits that apply now: with a downgrade pending, creation is held to the lower plan at once (spec 001 rule 2) */
export const effectiveLimits = (current: PlanLimits, pending: PlanLimits | null): PlanLimits =>
  pending
    ? (Object.fromEntries(LIMIT_KEYS.map((k) => [k, stricter(current[k], pending[k])])) as unknown as PlanLimits)
    : current;

export interface LimitAnswer {
  resource: Resource;
  allowed: boolean;
  currentUsage: number;
  /** 0 = unlimited */
  limit: number;
  /** -1 = unlimited */
  remaining: number;
}

/** CheckLimit's rule: allowed while usage is below the limit; always with limit 0 */
export const checkLimit = (resource: Resource, used: number, limit: number): LimitAnswer => ({
  resource,
  currentUsage: used,
  limit,
  allowed: limit === 0 || used < limit,
  remaining: limit === 0 ? -1 : Math.max(0, limit - used),
});

/** UsageResource.percentage: 0-100, -1 when unlimited */
export const percentageOf = (used: number, limit: number): number =>
  limit === 0 ? -1 : Math.min(100, Math.round((used / limit) * 10_000) / 100);
