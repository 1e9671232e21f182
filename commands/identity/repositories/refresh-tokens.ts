import type { Queryable } from '../../../infra/postgres/db';
import { prepared } from '../../../infra/postgres/pipeline';

/**
 * identity.refresh_tokens: only SHA-256 hashes of the tokens. A family is one login; rotation adds
 * a row to it and marks the used one rotated, with the pair it gave sealed beside it (a concurrent
 * refresh inside the grace window gets the same pair). Each row keeps the session generation of the
 * access it was issued for: once the account's or membership's sessions were ended (the generation
 * rose), the row no longer renews (null: issued before generations existed).
 */
export interface RefreshTokenRow {
  tokenHash: string;
  familyId: string;
  userId: string;
  tenantId: string;
  impersonatorId: string | null;
  expiresAt: Date;
  rotatedAt: Date | null;
  successorSealed: string | null;
  revokedAt: Date | null;
  sessionGeneration: number | null;
}

export interface NewRefreshToken {
  tokenHash: string;
  familyId: string;
  userId: string;
  tenantId: string;
  impersonatorId: string | null;
  issuedAt: Date;
  expiresAt: Date;
  sessionGeneration: number;
}

interface Row {
  token_hash: string;
  family_id: string;
  user_id: string;
  tenant_id: string;
  impersonator_id: string | null;
  expires_at: Date;
  rotated_at: Date | null;
  successor_sealed: string | null;
  revoked_at: Date | null;
  session_generation: number | null;
}

const INSERT =
  'INSERT INTO identity.refresh_tokens (token_hash, family_id, user_id, tenant_id, impersonator_id, issued_at, expires_at, session_generation) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)';
const valuesOf = (t: NewRefreshToken): unknown[] => [
  t.tokenHash,
  t.familyId,
  t.userId,
  t.tenantId,
  t.impersonatorId,
  t.issuedAt,
  t.expiresAt,
  t.sessionGeneration,
];

// a refresh's two statements, prepared (parsed and planned once per connection)
const LOCK_FOR_REFRESH = prepared(
  'identity_refresh_lock',
  `SELECT token_hash, family_id, user_id, tenant_id, impersonator_id, expires_at, rotated_at, successor_sealed, revoked_at,
     session_generation FROM identity.refresh_tokens WHERE token_hash = $1 FOR UPDATE`,
);
const ROTATE = prepared(
  'identity_refresh_rotate',
  `WITH rotated AS (UPDATE identity.refresh_tokens SET rotated_at = $10, successor_sealed = $11 WHERE token_hash = $9) ${INSERT}`,
);

export const refreshTokens = {
  async insert(q: Queryable, token: NewRefreshToken): Promise<void> {
    await q.query(INSERT, valuesOf(token));
  },

  /** one round trip for a rotation: the used row learns its successor while the new row is inserted */
  async rotate(
    q: Queryable,
    token: NewRefreshToken,
    from: { tokenHash: string; at: Date; successorSealed: string },
  ): Promise<void> {
    await q.query(ROTATE([...valuesOf(token), from.tokenHash, from.at, from.successorSealed]));
  },

  /** the row of a token, locked for the rest of the transaction (of concurrent refreshes, one decides at a time) */
  lockForRefresh: async (q: Queryable, tokenHash: string): Promise<RefreshTokenRow | null> => {
    const r = (await q.query<Row>(LOCK_FOR_REFRESH([tokenHash]))).rows[0];
    return r
      ? {
          tokenHash: r.token_hash,
          familyId: r.family_id,
          userId: r.user_id,
          tenantId: r.tenant_id,
          impersonatorId: r.impersonator_id,
          expiresAt: r.expires_at,
          rotatedAt: r.rotated_at,
          successorSealed: r.successor_sealed,
          revokedAt: r.revoked_at,
          sessionGeneration: r.session_generation,
        }
      : null;
  },

  async revokeFamily(q: Queryable, familyId: string, at: Date): Promise<void> {
    await q.query('UPDATE identity.refresh_tokens SET revoked_at = $2 WHERE family_id = $1 AND revoked_at IS NULL', [
      familyId,
      at,
    ]);
  },

  /** logout: the family of the user's token ends; a token of someone else changes nothing */
  async revokeFamilyOfToken(q: Queryable, tokenHash: string, userId: string, at: Date): Promise<void> {
    await q.query(
      `UPDATE identity.refresh_tokens SET revoked_at = $3 WHERE revoked_at IS NULL AND family_id = (SELECT family_id FROM identity.refresh_tokens WHERE token_hash = $1 AND user_id = $2)`,
      [tokenHash, userId, at],
    );
  },

  /** every session of the user, in every tenant */
  async revokeAllOfUser(q: Queryable, userId: string, at: Date): Promise<void> {
    await q.query('UPDATE identity.refresh_tokens SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL', [
      userId,
      at,
    ]);
  },

  /** the user's sessions in one tenant */
  async revokeInTenant(q: Queryable, userId: string, tenantId: string, at: Date): Promise<void> {
    await q.query(
      'UPDATE identity.refresh_tokens SET revoked_at = $3 WHERE user_id = $1 AND tenant_id = $2 AND revoked_at IS NULL',
      [userId, tenantId, at],
    );
  },

  /** a day after their absolute expiry their whole family has expired: reuse detection has nothing left to protect */
  purgeExpired: async (q: Queryable, now: Date): Promise<number> =>
    (await q.query(`DELETE FROM identity.refresh_tokens WHERE expires_at < $1::timestamptz - interval '1 day'`, [now]))
      .rowCount ?? 0,
};
