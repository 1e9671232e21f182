import { LIFETIMES, PLATFORM_TENANT_ID, RECOVERY } from '../../domain/identity/constants';
import { identityErrors } from '../../domain/identity/errors';
import { recoveryLockRemaining } from '../../domain/identity/mfa';
import type { CamelPair, SnakePair, TenantChoice, TenantSelection } from '../../domain/identity/views';
import { commonErrors } from '../../domain/shared/errors';
import { bumpAccessEpoch, identityRuntime } from '../../projections/identity/shared/runtime';
import type { Kernel } from '../../infra/kernel';
import { dummyVerify, hashPassword, verifyPassword } from '../../infra/security/passwords';
import { normalizeRecoveryCode } from '../../infra/security/recovery-codes';
import { recordLogin } from './account';
import { Account, accountStream, anonymousMeta, Mfa, mfaStream } from './aggregates';
import type { AccountRecord } from './lookups';
import { findAccount, membershipStatuses, ownerEmails } from './lookups';
import { tenantsOfUser } from '../../projections/identity/queries';
import { sendLater } from './mail';
import { checkTotp } from './mfa';
import { normalizeEmail, passwordWork } from './passwords';
import { credentials } from './repositories/credentials';
import { recoveryCodes } from './repositories/mfa-secrets';
import type { IssuedTokens } from './tokens';
import {
  camelPair,
  consumeOneTimeToken,
  createOneTimeToken,
  issueTokens,
  peekOneTimeToken,
  snakePair,
  userOf,
} from './tokens';

export { endSession, refreshSession } from './tokens';

/** Sessions: login (password, MFA, recovery code), the tenant choice, tenant switches, refresh and logout. */

export type SessionOutcome =
  { kind: 'tokens'; tokens: IssuedTokens } | { kind: 'select'; sessionToken: string; tenants: TenantChoice[] };

const selection = (o: Extract<SessionOutcome, { kind: 'select' }>): TenantSelection => ({
  requiresTenantSelection: true as const,
  sessionToken: o.sessionToken,
  tenants: o.tenants,
});

/** the answer of the camelCase login endpoints: the pair, or the tenant choice */
export const camelAnswer = (o: SessionOutcome): CamelPair | TenantSelection =>
  o.kind === 'tokens' ? camelPair(o.tokens) : selection(o);

/**
 * After the credentials are proven: one tenant (or the remembered one) gives tokens at once;
 * several give a 5-minute session token and the choice.
 */
export const openSession = async (
  kernel: Kernel,
  traceId: string,
  userId: string,
  method: string,
): Promise<SessionOutcome> => {
  const tenants = await tenantsOfUser(kernel.db, userId);
  if (tenants.length === 0) {
    // a member locked by the tenant is told so (spec 000: 403 account-locked); a deleted one is not let in
    if ((await membershipStatuses(kernel.db, userId)).includes('locked'))
      throw identityErrors.accountLocked('Your membership of this tenant is locked by its administrator.');
    throw identityErrors.invalidCredentials();
  }
  const remembered = (await credentials.of(kernel.db, userId))?.rememberedTenantId;
  const chosen = tenants.length === 1 ? tenants[0] : tenants.find((t) => t.id === remembered);
  if (chosen) {
    // the refresh-token row and the auth.user.logged_in event commit together (one transaction, one WAL flush)
    const tokens = await kernel.commands.run(anonymousMeta(PLATFORM_TENANT_ID, traceId, userId), async (uow) => {
      uow.decide(Account, await uow.load(Account, accountStream(userId)), {
        type: 'RecordLogin',
        tenantId: chosen.id,
        method,
      });
      return issueTokens(kernel, uow.tx, { userId, tenantId: chosen.id });
    });
    return { kind: 'tokens', tokens };
  }
  const { token } = await createOneTimeToken(kernel, kernel.db, {
    purpose: 'session',
    ttlMs: LIFETIMES.sessionTokenMs,
    userId,
    payload: { method },
  });
  return { kind: 'select', sessionToken: token, tenants };
};

/**
 * A locked account (the third recovery lockout, spec 000) cannot log in. The 1-hour lock after
 * failed recovery attempts stops recovery only: password login stays open to the holder, with
 * MFA still required — a stranger's junk recovery attempts must not lock a person out.
 */
export const assertNotLocked = async (kernel: Kernel, userId: string): Promise<AccountRecord> => {
  const account = await findAccount(kernel.db, userId);
  if (!account || account.status === 'locked') throw identityErrors.accountLocked();
  return account;
};

export const login = async (
  kernel: Kernel,
  traceId: string,
  input: { email: string; password: string; mfaCode?: string },
): Promise<CamelPair | TenantSelection> => {
  const email = normalizeEmail(input.email);
  const creds = await credentials.byEmail(kernel.db, email);
  const hash = creds?.passwordHash;
  if (!creds || !hash) {
    await passwordWork(kernel, email, () => dummyVerify(input.password));
    throw identityErrors.invalidCredentials();
  }
  const check = await passwordWork(kernel, creds.userId, () => verifyPassword(hash, input.password));
  if (!check.ok) throw identityErrors.invalidCredentials();
  if (check.needsRehash) {
    const rehashed = await passwordWork(kernel, creds.userId, () => hashPassword(input.password));
    await credentials.setPasswordHash(kernel.db, creds.userId, rehashed, kernel.clock.now());
  }
  const account = await assertNotLocked(kernel, creds.userId);
  if (account.mfa_enabled) {
    if (input.mfaCode === undefined || input.mfaCode === '') {
      const { token } = await createOneTimeToken(kernel, kernel.db, {
        purpose: 'mfa',
        ttlMs: LIFETIMES.mfaTokenMs,
        userId: creds.userId,
      });
      throw identityErrors.mfaRequired(token);
    }
    if (!(await checkTotp(kernel, creds.userId, input.mfaCode))) throw identityErrors.mfaInvalid();
  }
  return camelAnswer(await openSession(kernel, traceId, creds.userId, 'password'));
};

/** the second step of an MFA login: {mfa_token, code} → snake_case pair (or tenant selection) */
export const completeMfaLogin = async (
  kernel: Kernel,
  traceId: string,
  mfaToken: string,
  code: string,
): Promise<SnakePair | TenantSelection> => {
  const userId = userOf(await peekOneTimeToken(kernel, kernel.db, 'mfa', mfaToken, 'mfa_token'), 'mfa_token');
  if (!(await checkTotp(kernel, userId, code))) throw identityErrors.mfaInvalid();
  await consumeOneTimeToken(kernel, kernel.db, 'mfa', mfaToken, 'mfa_token');
  await assertNotLocked(kernel, userId);
  const outcome = await openSession(kernel, traceId, userId, 'password+totp');
  return outcome.kind === 'tokens' ? snakePair(kernel.db, outcome.tokens) : selection(outcome);
};

export const selectTenant = async (
  kernel: Kernel,
  traceId: string,
  input: { sessionToken: string; tenantId: string; rememberChoice?: boolean },
): Promise<CamelPair> => {
  const row = await peekOneTimeToken(kernel, kernel.db, 'session', input.sessionToken, 'session token');
  const userId = userOf(row, 'session token');
  const tenants = await tenantsOfUser(kernel.db, userId);
  if (!tenants.some((t) => t.id === input.tenantId)) throw commonErrors.notFound('The tenant does not exist.');
  await consumeOneTimeToken(kernel, kernel.db, 'session', input.sessionToken, 'session token');
  if (input.rememberChoice !== undefined)
    await credentials.rememberTenant(
      kernel.db,
      userId,
      input.rememberChoice ? input.tenantId : null,
      kernel.clock.now(),
    );
  const tokens = await issueTokens(kernel, kernel.db, { userId, tenantId: input.tenantId });
  await recordLogin(
    kernel,
    traceId,
    userId,
    input.tenantId,
    typeof row.payload.method === 'string' ? row.payload.method : 'password',
  );
  return camelPair(tokens);
};

export const switchTenant = async (
  kernel: Kernel,
  principal: { userId: string; impersonatorId?: string },
  tenantId: string,
): Promise<CamelPair> => {
  if (principal.impersonatorId) throw commonErrors.forbidden('An impersonation session cannot switch tenants.');
  const tenants = await tenantsOfUser(kernel.db, principal.userId);
  if (!tenants.some((t) => t.id === tenantId)) throw commonErrors.notFound('The tenant does not exist.');
  return camelPair(await issueTokens(kernel, kernel.db, { userId: principal.userId, tenantId }));
};

/**
 * Recovery login with a single-use code. The MFA stream is locked for the check, so of 20
 * concurrent uses of one code exactly one succeeds — and the 19 others are replays, not failed
 * guesses. Only wrong codes of an account that has codes count, each distinct code once: 5 in 15
 * minutes lock recovery for an hour and alert the tenant owners; the third lockout locks the
 * account and alerts the platform owner. Attempts are also limited per client address, and every
 * refusal takes at least RECOVERY.failureFloorMs of real time, so timing does not tell a
 * registered email (the floor measures elapsed time, not the platform's clock).
 */
export const recoveryLogin = async (
  kernel: Kernel,
  traceId: string,
  clientAddress: string,
  input: { email: string; recoveryCode: string },
): Promise<CamelPair | TenantSelection> => {
  const started = performance.now();
  try {
    return camelAnswer(await attemptRecovery(kernel, traceId, clientAddress, input));
  } catch (error) {
    const wait = RECOVERY.failureFloorMs - (performance.now() - started);
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    throw error;
  }
};

/** what one recovery attempt decided, inside the MFA stream's lock */
type RecoveryResult =
  { kind: 'signed-in' } | { kind: 'refused'; locked: boolean; lockout: 'none' | 'recovery' | 'account' };

const refusedRecovery = (lockout: 'none' | 'recovery' | 'account' = 'none', locked = false): RecoveryResult => ({
  kind: 'refused',
  locked,
  lockout,
});

const attemptRecovery = async (
  kernel: Kernel,
  traceId: string,
  clientAddress: string,
  input: { email: string; recoveryCode: string },
): Promise<SessionOutcome> => {
  const perAddress = await kernel.engines.cache.incrWindow(
    `identity:recovery:addr:${clientAddress}`,
    RECOVERY.windowMs,
  );
  if (perAddress.count > kernel.config.RECOVERY_ATTEMPTS_PER_ADDRESS) {
    throw commonErrors.rateLimited(Math.max(1, Math.ceil((perAddress.resetAt - kernel.clock.now().getTime()) / 1000)));
  }
  const code = normalizeRecoveryCode(input.recoveryCode);
  const creds = code ? await credentials.byEmail(kernel.db, normalizeEmail(input.email)) : null;
  if (!code || !creds) throw commonErrors.unauthorized('The recovery code is not valid.');
  const userId = creds.userId;
  const rt = identityRuntime(kernel);
  const now = kernel.clock.now().getTime();
  const result = await kernel.commands.run(
    anonymousMeta(PLATFORM_TENANT_ID, traceId, userId),
    async (uow): Promise<RecoveryResult> => {
      const mfa = await uow.load(Mfa, mfaStream(userId), { lock: true });
      const account = await uow.load(Account, accountStream(userId));
      if (recoveryLockRemaining(mfa.state, now) > 0 || account.state.status === 'locked')
        return refusedRecovery('none', true);
      const codes = await recoveryCodes.of(uow.tx, userId);
      if (mfa.state.status !== 'enabled' || codes.length === 0) return refusedRecovery();
      const matched =
        codes[
          rt.recovery.verify(
            userId,
            code,
            codes.map((c) => c.codeHash),
          )
        ];
      if (matched) {
        // a used code (or one a concurrent request is using right now) is a replay: refused, never counted
        const consumed =
          matched.usedAt === null && (await recoveryCodes.markUsed(uow.tx, userId, matched.codeHash, new Date(now)));
        if (!consumed) return refusedRecovery();
        uow.decide(Mfa, mfa, {
          type: 'UseRecoveryCode',
          userId,
          remaining: codes.filter((c) => c.usedAt === null).length - 1,
          now,
        });
        return { kind: 'signed-in' };
      }
      const { events, state } = uow.decide(Mfa, mfa, {
        type: 'FailRecovery',
        userId,
        now,
        fingerprint: rt.recovery.hash(userId, code),
      });
      const locked = events.find((e) => e.type === 'auth.mfa.recovery_locked');
      if (locked?.type !== 'auth.mfa.recovery_locked') return refusedRecovery();
      if (locked.data.accountLocked) {
        uow.decide(Account, account, { type: 'LockAccount', reason: `${state.lockouts} recovery lockouts` });
        uow.afterCommit(() => bumpAccessEpoch(kernel, { userId }));
      }
      return refusedRecovery(locked.data.accountLocked ? 'account' : 'recovery');
    },
  );
  if (result.kind === 'refused') {
    if (result.lockout !== 'none') alertLockout(kernel, userId, creds.email, result.lockout === 'account');
    if (result.locked)
      throw identityErrors.accountLocked('Too many failed recovery attempts; recovery is locked for now.');
    // the attempt that triggers a lock is still answered as a wrong code; the next ones get 403
    throw commonErrors.unauthorized('The recovery code is not valid.');
  }
  sendLater(kernel, {
    to: creds.email,
    subject: 'A recovery code was used',
    text: `A recovery code was used to sign in to your account at ${new Date(now).toISOString()}. If this was not you, reset your password and regenerate your codes.`,
  });
  return openSession(kernel, traceId, userId, 'recovery-code');
};

const alertLockout = (kernel: Kernel, userId: string, email: string, accountLocked: boolean): void => {
  sendLater(kernel, async () => {
    const tenants = await tenantsOfUser(kernel.db, userId);
    const owners = await ownerEmails(
      kernel.db,
      tenants.map((t) => t.id).filter((t) => t !== PLATFORM_TENANT_ID),
    );
    const mails = owners.length
      ? [
          {
            to: owners,
            subject: 'Security alert: recovery attempts locked an account',
            headers: { 'X-Platform-Alert': 'recovery-lockout' },
            text: `${RECOVERY.maxAttempts} failed recovery-code attempts within 15 minutes locked recovery for ${email} for one hour.`,
          },
        ]
      : [];
    if (accountLocked) {
      const platformOwners = await ownerEmails(kernel.db, [PLATFORM_TENANT_ID]);
      if (platformOwners.length) {
        mails.push({
          to: platformOwners,
          subject: 'Security alert: an account was locked',
          headers: { 'X-Platform-Alert': 'account-locked' },
          text: `The account ${email} (${userId}) is locked after ${RECOVERY.lockoutsBeforeLock} recovery lockouts (${RECOVERY.lockoutsBeforeLock * RECOVERY.maxAttempts} failed attempts).`,
        });
      }
    }
    return mails;
  });
};
