/**
 * The retry schedule of spec 002 (Limits): 5 retries after waits of 30, 60, 120, 240 and 480 s,
 * each with 10 % jitter, so a failed attempt n (1-based) waits RETRY_WAITS_MS[n − 1]; the sixth
 * failed attempt is final.
 */
export const RETRY_WAITS_MS = [30_000, 60_000, 120_000, 240_000, 480_000] as const;
export const MAX_RETRIES = RETRY_WAITS_MS.length;
export const MAX_ATTEMPTS = MAX_RETRIES + 1;
export const JITTER = 0.1;

/**
 * The wait after failed attempt `attempt` of a cycle, or null when no retry is left. jitterUnit is a
 * number in [0, 1) drawn by the caller (deciders get randomness from the command): 0 gives −10 %,
 * 0.5 the nominal wait, just under 1 gives +10 %.
 */
export const retryWaitMs = (attempt: number, jitterUnit: number): number | null => {
  const base = RETRY_WAITS_MS[attempt - 1];
  if (base === undefined) return null;
  const unit = Math.min(Math.max(jitterUnit, 0), 1);
  return Math.round(base * (1 - JITTER + 2 * JITTER * unit));
};
