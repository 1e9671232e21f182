import { LIFETIMES, PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import { identityErrors } from '../../domain/identity/errors';
import type { Kernel } from '../../infra/kernel';
import type { Queryable } from '../../infra/postgres/db';
import { inTransaction } from '../../infra/postgres/db';
import { hashToken, isOpaqueToken, newOpaqueToken, safeEqual } from '../../infra/security/one-time-tokens';
import type { Access } from './runtime';
import { identity, loadAccess } from './runtime';

export interface IssuedTokens {
  accessToken: string;
  refreshToken: string;
  /** access-token expiry */
  expiresAt: Date;
  expiresIn: number;
  access: Access;
  impersonatorId: string | null;
}

export const camelPair = (t: IssuedTokens) => ({ accessToken: t.accessToken, refreshToken: t.refreshToken, expiresAt: t.expiresAt.toISOString() });

export const snakePair = async (kernel: Kernel, q: Queryable, t: IssuedTokens) => {
  const { rows } = await q.query<{ mfa_enabled: boolean }>('SELECT mfa_enabled FROM rm.iam_accounts WHERE tenant_id = $1 AND id = $2', [PLATFORM_TENANT_ID, t.access.userId]);
  return {
    access_token: t.accessToken, refresh_token: t.refreshToken, token_type: 'Bearer' as const, expires_in: t.expiresIn,
    user: { id: t.access.userId, email: t.access.email, email_verified: t.access.emailVerified, roles: t.access.roles, tenant_id: t.access.tenantId, mfa_enabled: rows[0]?.mfa_enabled ?? false },
  };
};

const now = (kernel: Kernel) => kernel.clock.now();

/**
 * A new access token and refresh token for a user in a tenant. A refresh token starts a family
 * (one login) or continues one (rotation) with the family's absolute expiry.
 */
export const issueTokens = async (
  kernel: Kernel, q: Queryable,
  o: {
    userId: string; tenantId: string; familyId?: string; familyExpiresAt?: Date; impersonatorId?: string | null;
    /** the access already resolved (rotation uses the 5-second access cache, like every authenticated request) */
    access?: Access | null;
    /** rotation: the used token's row is marked rotated, with the new pair sealed, in the same statement */
    rotatedFrom?: { hash: string; at: Date };
  },
): Promise<IssuedTokens> => {
  const rt = identity(kernel);
  const access = o.access === undefined ? await loadAccess(kernel, q, o.userId, o.tenantId) : o.access;
  if (!access) throw identityErrors.invalidCredentials();
  const issuedAt = now(kernel);
  const impersonatorId = o.impersonatorId ?? null;
  const familyExpiresAt = o.familyExpiresAt ?? new Date(issuedAt.getTime() + (impersonatorId ? LIFETIMES.impersonationSeconds * 1000 : LIFETIMES.refreshTokenMs));
  const lifetime = impersonatorId
    ? Math.max(1, Math.min(LIFETIMES.impersonationSeconds, Math.ceil((familyExpiresAt.getTime() - issuedAt.getTime()) / 1000)))
    : LIFETIMES.accessTokenSeconds;
  const accessToken = await rt.ring.sign(
    { sub: access.userId, email: access.email, tenantId: access.tenantId, roles: access.roles, ...(impersonatorId ? { act: { sub: impersonatorId } } : {}) },
    { expiresInSeconds: lifetime },
  );
  const refreshToken = newOpaqueToken();
  const expiresAt = new Date(Math.floor(issuedAt.getTime() / 1000) * 1000 + lifetime * 1000);
  const params: unknown[] = [hashToken(refreshToken), o.familyId ?? kernel.ids.next(), access.userId, access.tenantId, impersonatorId, issuedAt, familyExpiresAt];
  if (o.rotatedFrom) {
    // one round trip for the rotation: the old row learns its successor while the new row is inserted
    const sealed = rt.box.seal(JSON.stringify({ accessToken, refreshToken, expiresAt: expiresAt.toISOString() }), `refresh:${o.rotatedFrom.hash}`);
    await q.query(
      `WITH rotated AS (UPDATE identity.refresh_tokens SET rotated_at = $9, successor_sealed = $10 WHERE token_hash = $8)
       INSERT INTO identity.refresh_tokens (token_hash, family_id, user_id, tenant_id, impersonator_id, issued_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [...params, o.rotatedFrom.hash, o.rotatedFrom.at, sealed]);
  } else {
    await q.query(
      `INSERT INTO identity.refresh_tokens (token_hash, family_id, user_id, tenant_id, impersonator_id, issued_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`, params);
  }
  return { accessToken, refreshToken, expiresAt, expiresIn: lifetime, access, impersonatorId };
};

interface SealedPair { accessToken: string; refreshToken: string; expiresAt: string }

/**
 * Rotation: every use gives a new pair and marks the used token rotated. Inside the grace window
 * a token already rotated answers the same new pair (concurrent refreshes of one client); after it,
 * a rotated token is a replay: the whole family is revoked.
 */
export const refreshTokens = async (kernel: Kernel, token: string): Promise<SealedPair> => {
  if (!isOpaqueToken(token)) throw identityErrors.tokenInvalid('refresh token');
  const rt = identity(kernel);
  const hash = hashToken(token);
  const outcome = await inTransaction(kernel.db, async (tx): Promise<SealedPair | 'invalid' | 'expired' | 'reused' | 'locked'> => {
    const { rows } = await tx.query<{ token_hash: string; family_id: string; user_id: string; tenant_id: string; impersonator_id: string | null; expires_at: Date; rotated_at: Date | null; successor_sealed: string | null; revoked_at: Date | null }>(
      'SELECT * FROM identity.refresh_tokens WHERE token_hash = $1 FOR UPDATE', [hash]);
    const row = rows[0];
    if (!row || !safeEqual(row.token_hash, hash) || row.revoked_at) return 'invalid';
    const at = now(kernel);
    if (row.expires_at.getTime() <= at.getTime()) return 'expired';
    if (row.rotated_at) {
      if (at.getTime() - row.rotated_at.getTime() <= rt.graceMs && row.successor_sealed) {
        return JSON.parse(rt.box.openString(row.successor_sealed, `refresh:${hash}`)) as SealedPair;
      }
      await tx.query('UPDATE identity.refresh_tokens SET revoked_at = $2 WHERE family_id = $1 AND revoked_at IS NULL', [row.family_id, at]);
      return 'reused';
    }
    const access = await rt.resolveAccess(row.user_id, row.tenant_id);
    if (!access) return (await isLocked(tx, row.user_id, row.tenant_id)) ? 'locked' : 'invalid';
    const issued = await issueTokens(kernel, tx, {
      userId: row.user_id, tenantId: row.tenant_id, familyId: row.family_id, familyExpiresAt: row.expires_at, impersonatorId: row.impersonator_id, access, rotatedFrom: { hash, at },
    });
    return { accessToken: issued.accessToken, refreshToken: issued.refreshToken, expiresAt: issued.expiresAt.toISOString() };
  });
  if (outcome === 'expired') throw identityErrors.tokenExpired('refresh token');
  if (outcome === 'locked') throw identityErrors.accountLocked('The account or its membership of this tenant is locked; the session cannot be renewed.');
  if (typeof outcome === 'string') throw identityErrors.tokenInvalid('refresh token');
  return outcome;
};

/** the account, or its membership of the tenant, is locked (rather than gone) */
const isLocked = async (q: Queryable, userId: string, tenantId: string): Promise<boolean> =>
  (await q.query(
    `SELECT 1 FROM rm.iam_accounts a LEFT JOIN rm.iam_members m ON m.tenant_id = $3 AND m.user_id = a.id
      WHERE a.tenant_id = $2 AND a.id = $1 AND (a.status = 'locked' OR m.status = 'locked')`, [userId, PLATFORM_TENANT_ID, tenantId])).rowCount !== 0;

/** logout: the family of the token (that session) ends; a token of someone else is ignored */
export const revokeRefreshToken = async (kernel: Kernel, userId: string, token: string): Promise<void> => {
  if (!isOpaqueToken(token)) return;
  await kernel.db.query(
    `UPDATE identity.refresh_tokens SET revoked_at = $3 WHERE revoked_at IS NULL AND family_id = (SELECT family_id FROM identity.refresh_tokens WHERE token_hash = $1 AND user_id = $2)`,
    [hashToken(token), userId, now(kernel)]);
};

export const revokeAllRefreshTokens = async (kernel: Kernel, q: Queryable, userId: string): Promise<void> => {
  await q.query('UPDATE identity.refresh_tokens SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL', [userId, now(kernel)]);
};

// ---------------------------------------------------------------------------------------------
// One-time tokens: verify-email, reset, invite, mfa challenge, tenant-selection session, oauth state

export type OneTimePurpose = 'verify-email' | 'reset' | 'invite' | 'email-change' | 'mfa' | 'session' | 'oauth-state' | 'siwe-nonce';

export interface OneTimeRow {
  purpose: OneTimePurpose;
  user_id: string | null;
  tenant_id: string | null;
  email: string | null;
  payload: Record<string, unknown>;
  expires_at: Date;
}

export const createOneTimeToken = async (
  kernel: Kernel, q: Queryable,
  o: { purpose: OneTimePurpose; ttlMs: number; userId?: string | null; tenantId?: string | null; email?: string | null; payload?: Record<string, unknown>; token?: string },
): Promise<{ token: string; expiresAt: Date }> => {
  const token = o.token ?? newOpaqueToken();
  const expiresAt = new Date(now(kernel).getTime() + o.ttlMs);
  await q.query(
    'INSERT INTO identity.one_time_tokens (token_hash, purpose, user_id, tenant_id, email, payload, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
    [hashToken(token), o.purpose, o.userId ?? null, o.tenantId ?? null, o.email ?? null, JSON.stringify(o.payload ?? {}), expiresAt]);
  return { token, expiresAt };
};

/**
 * Consumes a one-time token atomically (DELETE … RETURNING): of any number of concurrent uses,
 * exactly one gets the row. Unknown or used → 401 unauthorized; expired → 401 token-expired.
 */
export const consumeOneTimeToken = async (kernel: Kernel, q: Queryable, purpose: OneTimePurpose, token: string, what = 'token'): Promise<OneTimeRow> => {
  if (!isOpaqueToken(token)) throw identityErrors.tokenInvalid(what);
  const hash = hashToken(token);
  const { rows } = await q.query<OneTimeRow & { token_hash: string }>(
    'DELETE FROM identity.one_time_tokens WHERE token_hash = $1 AND purpose = $2 RETURNING *', [hash, purpose]);
  const row = rows[0];
  if (!row || !safeEqual(row.token_hash, hash)) throw identityErrors.tokenInvalid(what);
  if (row.expires_at.getTime() <= now(kernel).getTime()) throw identityErrors.tokenExpired(what);
  return row;
};

/** reads a one-time token without consuming it (an mfa_token survives a wrong code) */
export const peekOneTimeToken = async (kernel: Kernel, q: Queryable, purpose: OneTimePurpose, token: string, what = 'token'): Promise<OneTimeRow> => {
  if (!isOpaqueToken(token)) throw identityErrors.tokenInvalid(what);
  const hash = hashToken(token);
  const { rows } = await q.query<OneTimeRow & { token_hash: string }>('SELECT * FROM identity.one_time_tokens WHERE token_hash = $1 AND purpose = $2', [hash, purpose]);
  const row = rows[0];
  if (!row || !safeEqual(row.token_hash, hash)) throw identityErrors.tokenInvalid(what);
  if (row.expires_at.getTime() <= now(kernel).getTime()) throw identityErrors.tokenExpired(what);
  return row;
};
