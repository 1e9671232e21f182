import type { Queryable } from '../../../infra/postgres/db';

/**
 * identity.mfa_secrets (the TOTP secret, sealed with context totp:<userId>) and
 * identity.recovery_codes (HMACs of the codes; a used code keeps its hash with the time of use, so
 * a replay is told apart from a wrong guess).
 */
export interface RecoveryCode {
  codeHash: string;
  usedAt: Date | null;
}

export const mfaSecrets = {
  async save(q: Queryable, userId: string, sealedSecret: string, at: Date): Promise<void> {
    await q.query(
      'INSERT INTO identity.mfa_secrets (user_id, sealed_secret, created_at) VALUES ($1, $2, $3) ON CONFLICT (user_id) DO UPDATE SET sealed_secret = EXCLUDED.sealed_secret, created_at = EXCLUDED.created_at',
      [userId, sealedSecret, at],
    );
  },

  sealedSecretOf: async (q: Queryable, userId: string): Promise<string | null> =>
    (
      await q.query<{ sealed_secret: string }>('SELECT sealed_secret FROM identity.mfa_secrets WHERE user_id = $1', [
        userId,
      ])
    ).rows[0]?.sealed_secret ?? null,

  /** the secret and every recovery code go (MFA disabled) */
  async delete(q: Queryable, userId: string): Promise<void> {
    await q.query('DELETE FROM identity.mfa_secrets WHERE user_id = $1', [userId]);
    await q.query('DELETE FROM identity.recovery_codes WHERE user_id = $1', [userId]);
  },
};

export const recoveryCodes = {
  async replace(q: Queryable, userId: string, codeHashes: readonly string[]): Promise<void> {
    await q.query('DELETE FROM identity.recovery_codes WHERE user_id = $1', [userId]);
    await q.query('INSERT INTO identity.recovery_codes (user_id, code_hash) SELECT $1, unnest($2::text[])', [
      userId,
      codeHashes,
    ]);
  },

  of: async (q: Queryable, userId: string): Promise<RecoveryCode[]> =>
    (
      await q.query<{ code_hash: string; used_at: Date | null }>(
        'SELECT code_hash, used_at FROM identity.recovery_codes WHERE user_id = $1',
        [userId],
      )
    ).rows.map((r) => ({ codeHash: r.code_hash, usedAt: r.used_at })),

  /** marks a code used; false when it was used already (a concurrent request took it first) */
  markUsed: async (q: Queryable, userId: string, codeHash: string, at: Date): Promise<boolean> =>
    (
      await q.query(
        'UPDATE identity.recovery_codes SET used_at = $3 WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL',
        [userId, codeHash, at],
      )
    ).rowCount === 1,

  remaining: async (q: Queryable, userId: string): Promise<number> =>
    Number(
      (
        await q.query<{ n: string }>(
          'SELECT count(*) AS n FROM identity.recovery_codes WHERE user_id = $1 AND used_at IS NULL',
          [userId],
        )
      ).rows[0]?.n ?? 0,
    ),
};
