import { identityErrors } from '../../domain/identity/errors';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import { identityRuntime } from '../../projections/identity/shared/runtime';
import type { Kernel } from '../../infra/kernel';
import type { Queryable } from '../../infra/postgres/db';
import { verifyPassword } from '../../infra/security/passwords';
import { qrSvg } from '../../infra/security/qr';
import { generateRecoveryCodes } from '../../infra/security/recovery-codes';
import { generateTotpSecret, otpauthUri, verifyTotp } from '../../infra/security/totp';
import { flushPlatform, Mfa, mfaStream, platformUnit } from './aggregates';
import { findAccount } from './lookups';
import { passwordWork } from './passwords';
import { credentials } from './repositories/credentials';
import { mfaSecrets, recoveryCodes } from './repositories/mfa-secrets';

/** MFA commands of the signed-in user; the MFA stream lives in the platform pseudo-tenant. */

/** a TOTP code of the user, each accepted once (replay cache, 90 s, shared through Redis when configured) */
export const checkTotp = async (kernel: Kernel, userId: string, code: string): Promise<boolean> => {
  const sealed = await mfaSecrets.sealedSecretOf(kernel.db, userId);
  if (!sealed) return false;
  const secret = identityRuntime(kernel).box.openString(sealed, `totp:${userId}`);
  const counter = verifyTotp(secret, code, Math.floor(kernel.clock.now().getTime() / 1000));
  if (counter === null) return false;
  return kernel.engines.cache.setIfAbsent(`identity:totp:${userId}:${counter}`, '1', 90_000);
};

const replaceRecoveryCodes = async (kernel: Kernel, q: Queryable, userId: string): Promise<string[]> => {
  const codes = generateRecoveryCodes();
  const { recovery } = identityRuntime(kernel);
  await recoveryCodes.replace(
    q,
    userId,
    codes.map((c) => recovery.hash(userId, c)),
  );
  return codes;
};

export const enableMfa = async (kernel: Kernel, uow: UnitOfWork, userId: string, email: string) => {
  const p = platformUnit(kernel, uow);
  p.decide(Mfa, await p.load(Mfa, mfaStream(userId), { lock: true }), { type: 'StartMfaSetup', userId });
  const secret = generateTotpSecret();
  await mfaSecrets.save(uow.tx, userId, identityRuntime(kernel).box.seal(secret, `totp:${userId}`), kernel.clock.now());
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
  return { mfa_enabled: true as const, recovery_codes_remaining: await recoveryCodes.remaining(uow.tx, userId) };
};

/**
 * Password and a current code, both: the two factors that disabling MFA or regenerating codes
 * protects. Proven before the command's transaction opens — argon2id takes tens of ms of a core,
 * and a database connection held meanwhile is one another tenant's request waits for.
 */
export const proveBothFactors = async (
  kernel: Kernel,
  userId: string,
  input: { password: string; code: string },
): Promise<void> => {
  if (!(await findAccount(kernel.db, userId))?.mfa_enabled) throw identityErrors.mfaNotEnabled();
  const hash = (await credentials.of(kernel.db, userId))?.passwordHash;
  if (!hash || !(await passwordWork(kernel, userId, () => verifyPassword(hash, input.password))).ok)
    throw identityErrors.invalidCredentials();
  if (!(await checkTotp(kernel, userId, input.code))) throw identityErrors.mfaInvalid();
};

/** after proveBothFactors */
export const disableMfa = async (kernel: Kernel, uow: UnitOfWork, userId: string) => {
  const p = platformUnit(kernel, uow);
  const mfa = await p.load(Mfa, mfaStream(userId), { lock: true });
  p.decide(Mfa, mfa, { type: 'DisableMfa', userId });
  await mfaSecrets.delete(uow.tx, userId);
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
