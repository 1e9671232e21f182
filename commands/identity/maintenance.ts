import type { Queryable } from '../../infra/postgres/db';
import { oneTimeTokens } from './repositories/one-time-tokens';
import { refreshTokens } from './repositories/refresh-tokens';

/**
 * Deletes what can no longer be used: one-time tokens (verification, reset, invitation, MFA
 * challenges, tenant-selection sessions, OAuth states, SIWE nonces) past their expiry, and refresh
 * tokens a day after their absolute expiry (by then their whole family has expired, so reuse
 * detection has nothing left to protect). Returns how many rows went.
 */
export const purgeExpiredIdentityTokens = async (
  db: Queryable,
  now: Date,
): Promise<{ oneTime: number; refresh: number }> => ({
  oneTime: await oneTimeTokens.purgeExpired(db, now),
  refresh: await refreshTokens.purgeExpired(db, now),
});
