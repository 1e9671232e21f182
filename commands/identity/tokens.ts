import { LIFETIMES } from '../../domain/identity/constants';
import { identityErrors } from '../../domain/identity/errors';
import type { CamelPair, SnakePair } from '../../domain/identity/views';
import { assertNever } from '../../domain/shared/decider';
import type { Access } from '../../projections/identity/shared/runtime';
import { identityRuntime, sessionEnded } from '../../projections/identity/shared/runtime';
import type { Kernel } from '../../infra/kernel';
import type { Queryable } from '../../infra/postgres/db';
import { inTransaction } from '../../infra/postgres/db';
import { hashToken, isOpaqueToken, newOpaqueToken, safeEqual } from '../../infra/security/one-time-tokens';
import { findAccount, isLocked, loadAccess } from './lookups';
import type { OneTimePurpose, OneTimeRow } from './repositories/one-time-tokens';
import { oneTimeTokens } from './repositories/one-time-tokens';
import { refreshTokens } from './repositories/refresh-tokens';

export type { OneTimePurpose, OneTimeRow } from './repositories/one-time-tokens';

export interface IssuedTokens {
  accessToken: string;
  refreshToken: string;
  /** access-token expiry */
  expiresAt: Date;
  expiresIn: number;
  access: Access;
  impersonatorId: string | null;
}

export const camelPair = (t: IssuedTokens): CamelPair => ({
  accessToken: t.accessToken,
  refreshToken: t.refreshToken,
  expiresAt: t.expiresAt.toISOString(),
});

export const snakePair = async (q: Queryable, t: IssuedTokens): Promise<SnakePair> => {
  const account = await findAccount(q, t.access.userId);
  return {
    access_token: t.accessToken,
    refresh_token: t.refreshToken,
    token_type: 'Bearer' as const,
    expires_in: t.expiresIn,
    user: {
      id: t.access.userId,
      email: t.access.email,
      email_verified: t.access.emailVerified,
      roles: t.access.roles,
      tenant_id: t.access.tenantId,
      mfa_enabled: account?.mfa_enabled ?? false,
    },
  };
};

const now = (kernel: Kernel) => kernel.clock.now();

/**
 * A new access token and refresh token for a user in a tenant. A refresh token starts a family
 * (one login) or continues one (rotation) with the family's absolute expiry.
 */
export const issueTokens = async (
  kernel: Kernel,
  q: Queryable,
  o: {
    userId: string;
    tenantId: string;
    familyId?: string;
    familyExpiresAt?: Date;
    impersonatorId?: string | null;
    /** the access already resolved (rotation uses the 5-second access cache, like every authenticated request) */
    access?: Access | null;
    /** rotation: the used token's row is marked rotated, with the new pair sealed, in the same statement */
    rotatedFrom?: { hash: string; at: Date };
  },
): Promise<IssuedTokens> => {
  const rt = identityRuntime(kernel);
  const access = o.access === undefined ? await loadAccess(kernel, q, o.userId, o.tenantId) : o.access;
  if (!access) throw identityErrors.invalidCredentials();
  const issuedAt = now(kernel);
  const impersonatorId = o.impersonatorId ?? null;
  const familyExpiresAt =
    o.familyExpiresAt ??
    new Date(issuedAt.getTime() + (impersonatorId ? LIFETIMES.impersonationSeconds * 1000 : LIFETIMES.refreshTokenMs));
  const lifetime = impersonatorId
    ? Math.max(
        1,
        Math.min(LIFETIMES.impersonationSeconds, Math.ceil((familyExpiresAt.getTime() - issuedAt.getTime()) / 1000)),
      )
    : LIFETIMES.accessTokenSeconds;
  const accessToken = await rt.ring.sign(
    {
      sub: access.userId,
      email: access.email,
      tenantId: access.tenantId,
      roles: access.roles,
      ...(impersonatorId ? { act: { sub: impersonatorId } } : {}),
      sgen: access.sessionGeneration,
    },
    { expiresInSeconds: lifetime },
  );
  const refreshToken = newOpaqueToken();
  const expiresAt = new Date(Math.floor(issuedAt.getTime() / 1000) * 1000 + lifetime * 1000);
  const row = {
    tokenHash: hashToken(refreshToken),
    familyId: o.familyId ?? kernel.ids.next(),
    userId: access.userId,
    tenantId: access.tenantId,
    impersonatorId,
    issuedAt,
    expiresAt: familyExpiresAt,
    sessionGeneration: access.sessionGeneration,
  };
  if (o.rotatedFrom) {
    const sealed = rt.box.seal(
      JSON.stringify({ accessToken, refreshToken, expiresAt: expiresAt.toISOString() }),
      `refresh:${o.rotatedFrom.hash}`,
    );
    await refreshTokens.rotate(q, row, {
      tokenHash: o.rotatedFrom.hash,
      at: o.rotatedFrom.at,
      successorSealed: sealed,
    });
  } else {
    await refreshTokens.insert(q, row);
  }
  return { accessToken, refreshToken, expiresAt, expiresIn: lifetime, access, impersonatorId };
};

/** what a refresh decided: a new pair (or, inside the grace window, the pair the token already gave), or why not */
export type RefreshOutcome =
  { kind: 'renewed'; pair: CamelPair } | { kind: 'refused'; reason: 'invalid' | 'expired' | 'reused' | 'locked' };

const refused = (reason: Extract<RefreshOutcome, { kind: 'refused' }>['reason']): RefreshOutcome => ({
  kind: 'refused',
  reason,
});

/**
 * Rotation: every use gives a new pair and marks the used token rotated. Inside the grace window
 * a token already rotated answers the same new pair (concurrent refreshes of one client); after it,
 * a rotated token is a replay: the whole family is revoked.
 */
export const refreshSession = async (kernel: Kernel, token: string): Promise<CamelPair> => {
  if (!isOpaqueToken(token)) throw identityErrors.tokenInvalid('refresh token');
  const rt = identityRuntime(kernel);
  const hash = hashToken(token);
  const outcome = await inTransaction(kernel.db, async (tx): Promise<RefreshOutcome> => {
    const row = await refreshTokens.lockForRefresh(tx, hash);
    if (!row || !safeEqual(row.tokenHash, hash) || row.revokedAt) return refused('invalid');
    const at = now(kernel);
    if (row.expiresAt.getTime() <= at.getTime()) return refused('expired');
    if (row.rotatedAt) {
      if (at.getTime() - row.rotatedAt.getTime() <= rt.graceMs && row.successorSealed) {
        return {
          kind: 'renewed',
          pair: JSON.parse(rt.box.openString(row.successorSealed, `refresh:${hash}`)) as CamelPair,
        };
      }
      await refreshTokens.revokeFamily(tx, row.familyId, at);
      return refused('reused');
    }
    const access = await rt.resolveAccess(row.userId, row.tenantId);
    if (!access) return refused((await isLocked(tx, row.userId, row.tenantId)) ? 'locked' : 'invalid');
    // the session was ended after this token was issued (password reset, lock, deletion): it is over for good
    if (row.sessionGeneration !== null && sessionEnded(row.sessionGeneration, access)) {
      await refreshTokens.revokeFamily(tx, row.familyId, at);
      return refused('invalid');
    }
    const issued = await issueTokens(kernel, tx, {
      userId: row.userId,
      tenantId: row.tenantId,
      familyId: row.familyId,
      familyExpiresAt: row.expiresAt,
      impersonatorId: row.impersonatorId,
      access,
      rotatedFrom: { hash, at },
    });
    return { kind: 'renewed', pair: camelPair(issued) };
  });
  if (outcome.kind === 'renewed') return outcome.pair;
  switch (outcome.reason) {
    case 'expired':
      throw identityErrors.tokenExpired('refresh token');
    case 'locked':
      throw identityErrors.accountLocked(
        'The account or its membership of this tenant is locked; the session cannot be renewed.',
      );
    case 'invalid':
    case 'reused':
      throw identityErrors.tokenInvalid('refresh token');
    default:
      return assertNever(outcome.reason);
  }
};

/** logout: the family of the token (that session) ends; a token of someone else is ignored */
export const endSession = async (kernel: Kernel, userId: string, token: string): Promise<void> => {
  if (!isOpaqueToken(token)) return;
  await refreshTokens.revokeFamilyOfToken(kernel.db, hashToken(token), userId, now(kernel));
};

// ---------------------------------------------------------------------------------------------
// One-time tokens: verify-email, reset, invite, mfa challenge, tenant-selection session, oauth state

export const createOneTimeToken = async (
  kernel: Kernel,
  q: Queryable,
  o: {
    purpose: OneTimePurpose;
    ttlMs: number;
    userId?: string | null;
    tenantId?: string | null;
    email?: string | null;
    payload?: Record<string, unknown>;
    token?: string;
  },
): Promise<{ token: string; expiresAt: Date }> => {
  const token = o.token ?? newOpaqueToken();
  const createdAt = now(kernel);
  const expiresAt = new Date(createdAt.getTime() + o.ttlMs);
  await oneTimeTokens.insert(q, {
    tokenHash: hashToken(token),
    purpose: o.purpose,
    userId: o.userId ?? null,
    tenantId: o.tenantId ?? null,
    email: o.email ?? null,
    payload: o.payload ?? {},
    expiresAt,
    createdAt,
  });
  return { token, expiresAt };
};

/** a usable row: the hash compared in constant time, not expired; unknown or used → 401 unauthorized, expired → 401 token-expired */
const usable = (kernel: Kernel, row: OneTimeRow | null, hash: string, what: string): OneTimeRow => {
  if (!row || !safeEqual(row.tokenHash, hash)) throw identityErrors.tokenInvalid(what);
  if (row.expiresAt.getTime() <= now(kernel).getTime()) throw identityErrors.tokenExpired(what);
  return row;
};

/** Consumes a one-time token atomically: of any number of concurrent uses, exactly one gets the row. */
export const consumeOneTimeToken = async (
  kernel: Kernel,
  q: Queryable,
  purpose: OneTimePurpose,
  token: string,
  what = 'token',
): Promise<OneTimeRow> => {
  if (!isOpaqueToken(token)) throw identityErrors.tokenInvalid(what);
  const hash = hashToken(token);
  return usable(kernel, await oneTimeTokens.take(q, purpose, hash), hash, what);
};

/** reads a one-time token without consuming it (an mfa_token survives a wrong code) */
export const peekOneTimeToken = async (
  kernel: Kernel,
  q: Queryable,
  purpose: OneTimePurpose,
  token: string,
  what = 'token',
): Promise<OneTimeRow> => {
  if (!isOpaqueToken(token)) throw identityErrors.tokenInvalid(what);
  const hash = hashToken(token);
  return usable(kernel, await oneTimeTokens.find(q, purpose, hash), hash, what);
};

/** the user a token of this purpose concerns (verify-email, reset, mfa, session tokens always name one) */
export const userOf = (row: OneTimeRow, what = 'token'): string => {
  if (!row.userId) throw identityErrors.tokenInvalid(what);
  return row.userId;
};
