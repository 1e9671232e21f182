import { z } from 'zod';

const int = (def: number, min: number, max: number) => z.coerce.number().int().min(min).max(max).default(def);

/** the money variables of spec 002 (Limits); read from the environment once per process */
export const MoneySettingsSchema = z.object({
  MONEY_HOLD_TTL_HOURS: int(72, 1, 168),
  MONEY_MAX_HOLDS_PER_WALLET: int(100, 1, 10_000),
  MONEY_REVERSAL_MAX_AGE_DAYS: int(365, 1, 3650),
  MONEY_HOLD_CLEANUP_INTERVAL_SEC: int(60, 1, 3600),
  MONEY_PLAN_LIMITS_CACHE_SEC: int(300, 1, 3600),
});

export interface MoneySettings {
  holdTtlDefaultMs: number;
  holdTtlMaxMs: number;
  maxHoldsPerWallet: number;
  reversalMaxAgeDays: number;
  holdCleanupIntervalMs: number;
  planLimitsFreshMs: number;
}

export const HOLD_TTL_MAX_HOURS = 168;

export const loadMoneySettings = (env: NodeJS.ProcessEnv = process.env): MoneySettings => {
  const relevant = Object.fromEntries(Object.entries(env).filter(([k, v]) => k.startsWith('MONEY_') && v !== ''));
  const s = MoneySettingsSchema.parse(relevant);
  return {
    holdTtlDefaultMs: s.MONEY_HOLD_TTL_HOURS * 3600_000,
    holdTtlMaxMs: HOLD_TTL_MAX_HOURS * 3600_000,
    maxHoldsPerWallet: s.MONEY_MAX_HOLDS_PER_WALLET,
    reversalMaxAgeDays: s.MONEY_REVERSAL_MAX_AGE_DAYS,
    holdCleanupIntervalMs: s.MONEY_HOLD_CLEANUP_INTERVAL_SEC * 1000,
    planLimitsFreshMs: s.MONEY_PLAN_LIMITS_CACHE_SEC * 1000,
  };
};
