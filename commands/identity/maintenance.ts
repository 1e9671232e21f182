import type { Queryable } from '../../infra/postgres/db';

/**
 * Deletes what can no longer be used: one-time tokens (verification, reset, invitation, MFA
 * challenges, tenant-selection sessions, OAuth states, SIWE nonces) past their expiry, and refresh
 * tokens a day after their absolute expiry (by then their whole family has expired, so reuse
 * detection has nothing left to protect). Returns how many rows went.
 */
export const purgeExpiredIdentityTokens = async (db: Queryable, now: Date): Promise<{ oneTime: number; refresh: number }> => {
  const oneTime = await db.query('DELETE FROM identity.one_time_tokens WHERE expires_at < $1', [now]);
  const refresh = await db.query(`DELETE FROM identity.refresh_tokens WHERE expires_at < $1::timestamptz - interval '1 day'`, [now]);
  return { oneTime: oneTime.rowCount ?? 0, refresh: refresh.rowCount ?? 0 };
};
