import { identityErrors } from '../../domain/identity/errors';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import type { Kernel } from '../../infra/kernel';
import type { Queryable } from '../../infra/postgres/db';
import { verifyPassword } from '../../infra/security/passwords';
import { findAccount } from '../../projections/identity/queries';
import { qrSvg } from '../../infra/security/qr';
import { generateRecoveryCodes } from '../../infra/security/recovery-codes';
import { generateTotpSecret, otpauthUri } from '../../infra/security/totp';
import { checkTotp, credentialsOf, passwordWork } from './accounts';
import { flushPlatform, Mfa, mfaStream, platformUnit } from './aggregates';
import { identity } from './runtime';

/** MFA commands of the signed-in user; the MFA stream lives in the platform pseudo-tenant. */

const replaceRecoveryCodes = async (kernel: Kernel, q: Queryable, userId: string): Promise<string[]> => {
  const codes = generateRecoveryCodes();
  const { recovery } = identity(kernel);
  await q.query('DELETE FROM identity.recovery_codes WHERE user_id = $1', [userId]);
  await q.query('INSERT INTO identity.recovery_codes (user_id, code_hash) SELECT $1, unnest($2::text[])', [userId, codes.map((c) => recovery.hash(userId, c))]);
  return codes;
};

export const remainingRecoveryCodes = async (q: Queryable, userId: string): Promise<number> =>
  Number((await q.query<{ n: string }>('SELECT count(*) AS n FROM identity.recovery_codes WHERE user_id = $1 AND used_at IS NULL', [userId])).rows[0]?.n ?? 0);

export const enableMfa = async (kernel: Kernel, uow: UnitOfWork, userId: string, email: string) => {
  const p = platformUnit(kernel, uow);
  p.decide(Mfa, await p.load(Mfa, mfaStream(userId), { lock: true }), { type: 'StartMfaSetup', userId });
  const secret = generateTotpSecret();
  await uow.tx.query(`INSERT INTO identity.mfa_secrets (user_id, sealed_secret) VALUES ($1, $2) ON CONFLICT (user_id) DO UPDATE SET sealed_secret = EXCLUDED.sealed_secret, created_at = now()`,
    [userId, identity(kernel).box.seal(secret, `totp:${userId}`)]);
  const codes = await replaceRecoveryCodes(kernel, uow.tx, userId);
  await flushPlatform(kernel, uow, p);
  const uri = otpauthUri({ issuer: 'Platform', account: email.replace(/:/g, ''), secretBase32: secret });
  return { secret, otpauth_uri: uri, qr_code_svg: await qrSvg(uri), recovery_codes: codes };
};

export const confirmMfa = async (kernel: Kernel, uow: UnitOfWork, userId: string, code: string) => {
  const p = platformUnit(kernel, uow);
  const mfa = await p.load(Mfa, mfaStream(userId), { lock: true });
  if (mfa.state.status === 'enabled') throw identityErrors.mfaAlreadyEnabled();
  if (mfa.state.status !== 'pending') throw identityErrors.mfaNotPending();
  if (!(await checkTotp(kernel, userId, code))) throw identityErrors.mfaInvalid();
  p.decide(Mfa, mfa, { type: 'ConfirmMfa', userId });
  await flushPlatform(kernel, uow, p);
  return { mfa_enabled: true as const, recovery_codes_remaining: await remainingRecoveryCodes(uow.tx, userId) };
};

/**
 * Password and a current code, both: the two factors that disabling MFA or regenerating codes
 * protects. Proven before the command's transaction opens — argon2id takes tens of ms of a core,
 * and a database connection held meanwhile is one another tenant's request waits for.
 */
export const proveBothFactors = async (kernel: Kernel, userId: string, input: { password: string; code: string }): Promise<void> => {
  if (!(await findAccount(kernel.db, userId))?.mfa_enabled) throw identityErrors.mfaNotEnabled();
  const hash = (await credentialsOf(kernel.db, userId))?.password_hash;
  if (!hash || !(await passwordWork(kernel, userId, () => verifyPassword(hash, input.password))).ok) throw identityErrors.invalidCredentials();
  if (!(await checkTotp(kernel, userId, input.code))) throw identityErrors.mfaInvalid();
};

/** after proveBothFactors */
export const disableMfa = async (kernel: Kernel, uow: UnitOfWork, userId: string) => {
  const p = platformUnit(kernel, uow);
  const mfa = await p.load(Mfa, mfaStream(userId), { lock: true });
  p.decide(Mfa, mfa, { type: 'DisableMfa', userId });
  await uow.tx.query('DELETE FROM identity.mfa_secrets WHERE user_id = $1', [userId]);
  await uow.tx.query('DELETE FROM identity.recovery_codes WHERE user_id = $1', [userId]);
  await flushPlatform(kernel, uow, p);
  return { mfa_enabled: false as const };
};

/** after proveBothFactors */
export const regenerateRecoveryCodes = async (kernel: Kernel, uow: UnitOfWork, userId: string) => {
  const p = platformUnit(kernel, uow);
  const mfa = await p.load(Mfa, mfaStream(userId), { lock: true });
  if (mfa.state.status !== 'enabled') throw identityErrors.mfaNotEnabled();
  const codes = await replaceRecoveryCodes(kernel, uow.tx, userId);
  p.decide(Mfa, mfa, { type: 'RegenerateRecoveryCodes', userId, count: codes.length });
  await flushPlatform(kernel, uow, p);
  return { recovery_codes: codes };
};
