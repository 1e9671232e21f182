import type { Queryable } from '../../../infra/postgres/db';

/**
 * identity.one_time_tokens: verify-email, reset, invite, email-change, mfa challenge,
 * tenant-selection session, OAuth state and SIWE nonce — only the hash of the token, what it is
 * for, whom it concerns and until when.
 */
export type OneTimePurpose =
  'verify-email' | 'reset' | 'invite' | 'email-change' | 'mfa' | 'session' | 'oauth-state' | 'siwe-nonce';

export interface OneTimeRow {
  tokenHash: string;
  purpose: OneTimePurpose;
  userId: string | null;
  tenantId: string | null;
  email: string | null;
  payload: Record<string, unknown>;
  expiresAt: Date;
}

interface Row {
  token_hash: string;
  purpose: OneTimePurpose;
  user_id: string | null;
  tenant_id: string | null;
  email: string | null;
  payload: Record<string, unknown>;
  expires_at: Date;
}
const rowOf = (r: Row): OneTimeRow => ({
  tokenHash: r.token_hash,
  purpose: r.purpose,
  userId: r.user_id,
  tenantId: r.tenant_id,
  email: r.email,
  payload: r.payload,
  expiresAt: r.expires_at,
});
const COLUMNS = 'token_hash, purpose, user_id, tenant_id, email, payload, expires_at';

export const oneTimeTokens = {
  async insert(
    q: Queryable,
    t: Omit<OneTimeRow, 'payload'> & { payload?: Record<string, unknown>; createdAt: Date },
  ): Promise<void> {
    await q.query(
      'INSERT INTO identity.one_time_tokens (token_hash, purpose, user_id, tenant_id, email, payload, expires_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
      [
        t.tokenHash,
        t.purpose,
        t.userId,
        t.tenantId,
        t.email,
        JSON.stringify(t.payload ?? {}),
        t.expiresAt,
        t.createdAt,
      ],
    );
  },

  /** takes the row atomically (DELETE … RETURNING): of any number of concurrent uses, exactly one gets it */
  take: async (q: Queryable, purpose: OneTimePurpose, tokenHash: string): Promise<OneTimeRow | null> => {
    const row = (
      await q.query<Row>(
        `DELETE FROM identity.one_time_tokens WHERE token_hash = $1 AND purpose = $2 RETURNING ${COLUMNS}`,
        [tokenHash, purpose],
      )
    ).rows[0];
    return row ? rowOf(row) : null;
  },

  /** reads without taking (an mfa_token survives a wrong code) */
  find: async (q: Queryable, purpose: OneTimePurpose, tokenHash: string): Promise<OneTimeRow | null> => {
    const row = (
      await q.query<Row>(`SELECT ${COLUMNS} FROM identity.one_time_tokens WHERE token_hash = $1 AND purpose = $2`, [
        tokenHash,
        purpose,
      ])
    ).rows[0];
    return row ? rowOf(row) : null;
  },

  /** spends every token of a purpose the user holds (every reset link once a reset is done) */
  async deleteOfUser(q: Queryable, purpose: OneTimePurpose, userId: string): Promise<void> {
    await q.query('DELETE FROM identity.one_time_tokens WHERE purpose = $1 AND user_id = $2', [purpose, userId]);
  },

  purgeExpired: async (q: Queryable, now: Date): Promise<number> =>
    (await q.query('DELETE FROM identity.one_time_tokens WHERE expires_at < $1', [now])).rowCount ?? 0,
};
