import type { Queryable } from '../../../infra/postgres/db';
import { PgCode, pgErrorCode } from '../../../infra/postgres/db';

/**
 * identity.credentials: one row per account — the login email (unique, lower case), the argon2id
 * hash (none for accounts made by a provider) and the tenant a login enters when several are open.
 */
export interface Credentials {
  userId: string;
  email: string;
  passwordHash: string | null;
  rememberedTenantId: string | null;
}

interface Row {
  user_id: string;
  email: string;
  password_hash: string | null;
  remembered_tenant_id: string | null;
}
const credentialsOf = (r: Row): Credentials => ({
  userId: r.user_id,
  email: r.email,
  passwordHash: r.password_hash,
  rememberedTenantId: r.remembered_tenant_id,
});
const COLUMNS = 'user_id, email, password_hash, remembered_tenant_id';

export const credentials = {
  /** claims the email for a new account; false when another account holds it */
  async claim(
    q: Queryable,
    o: { userId: string; email: string; passwordHash: string | null; at: Date },
  ): Promise<boolean> {
    try {
      await q.query(
        'INSERT INTO identity.credentials (user_id, email, password_hash, updated_at) VALUES ($1, $2, $3, $4)',
        [o.userId, o.email, o.passwordHash, o.at],
      );
      return true;
    } catch (error) {
      if (pgErrorCode(error) === PgCode.uniqueViolation) return false;
      throw error;
    }
  },

  /** `email` normalized (trimmed, lower case) */
  byEmail: async (q: Queryable, email: string): Promise<Credentials | null> => {
    const row = (await q.query<Row>(`SELECT ${COLUMNS} FROM identity.credentials WHERE email = $1`, [email])).rows[0];
    return row ? credentialsOf(row) : null;
  },

  of: async (q: Queryable, userId: string): Promise<Credentials | null> => {
    const row = (await q.query<Row>(`SELECT ${COLUMNS} FROM identity.credentials WHERE user_id = $1`, [userId]))
      .rows[0];
    return row ? credentialsOf(row) : null;
  },

  async setPasswordHash(q: Queryable, userId: string, passwordHash: string, at: Date): Promise<void> {
    await q.query('UPDATE identity.credentials SET password_hash = $2, updated_at = $3 WHERE user_id = $1', [
      userId,
      passwordHash,
      at,
    ]);
  },

  async rememberTenant(q: Queryable, userId: string, tenantId: string | null, at: Date): Promise<void> {
    await q.query('UPDATE identity.credentials SET remembered_tenant_id = $2, updated_at = $3 WHERE user_id = $1', [
      userId,
      tenantId,
      at,
    ]);
  },

  /** moves the account to another login email; false when another account holds that one */
  async changeEmail(q: Queryable, userId: string, email: string, at: Date): Promise<boolean> {
    try {
      await q.query('UPDATE identity.credentials SET email = $2, updated_at = $3 WHERE user_id = $1', [
        userId,
        email,
        at,
      ]);
      return true;
    } catch (error) {
      if (pgErrorCode(error) === PgCode.uniqueViolation) return false;
      throw error;
    }
  },
};
