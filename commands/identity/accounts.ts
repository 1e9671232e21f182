import { LIFETIMES, OWNER_ROLE, PLATFORM_OWNER_ROLE, PLATFORM_TENANT_ID, RECOVERY } from '../../domain/identity/constants';
import { identityErrors } from '../../domain/identity/errors';
import { recoveryLockRemaining } from '../../domain/identity/mfa';
import { commonErrors } from '../../domain/shared/errors';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import type { Kernel } from '../../infra/kernel';
import type { Queryable } from '../../infra/postgres/db';
import { PgCode, pgErrorCode } from '../../infra/postgres/db';
import { checkPasswordPolicy, dummyVerify, hashPassword, verifyPassword } from '../../infra/security/passwords';
import { normalizeRecoveryCode } from '../../infra/security/recovery-codes';
import { verifyTotp } from '../../infra/security/totp';
import type { AccountRow, TenantChoice } from '../../projections/identity/queries';
import { findAccount, findTenantBySlug, membershipStatuses, ownerEmails, tenantsOfUser } from '../../projections/identity/queries';
import { Account, accountStream, anonymousMeta, flushPlatform, Membership, memberStream, Mfa, mfaStream, platformUnit, Role, roleStream, Tenant, tenantStream } from './aggregates';
import { link, sendLater } from './mail';
import { bumpAccessEpoch, identity, ownerPermissions } from './runtime';
import type { IssuedTokens } from './tokens';
import { consumeOneTimeToken, createOneTimeToken, issueTokens, peekOneTimeToken } from './tokens';

export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

/** argon2id work of one account (or email), bounded so one caller cannot starve the others (infra/security/work-limiter.ts) */
export const passwordWork = <T>(kernel: Kernel, key: string, work: () => Promise<T>): Promise<T> => identity(kernel).passwordWork.run(key, work);

export const assertPasswordPolicy = (password: string): void => {
  const errors = checkPasswordPolicy(password);
  if (errors.length) throw identityErrors.passwordPolicy(errors);
};

/** claims the email for a new account in the command's transaction; a taken email is 409 */
export const claimEmail = async (q: Queryable, userId: string, email: string, passwordHash: string | null): Promise<void> => {
  try {
    await q.query('INSERT INTO identity.credentials (user_id, email, password_hash) VALUES ($1, $2, $3)', [userId, email, passwordHash]);
  } catch (error) {
    if (pgErrorCode(error) === PgCode.uniqueViolation) throw identityErrors.emailTaken();
    throw error;
  }
};

interface Credentials { user_id: string; email: string; password_hash: string | null; remembered_tenant_id: string | null }
export const credentialsByEmail = async (q: Queryable, email: string): Promise<Credentials | null> =>
  (await q.query<Credentials>('SELECT user_id, email, password_hash, remembered_tenant_id FROM identity.credentials WHERE email = $1', [normalizeEmail(email)])).rows[0] ?? null;
export const credentialsOf = async (q: Queryable, userId: string): Promise<Credentials | null> =>
  (await q.query<Credentials>('SELECT user_id, email, password_hash, remembered_tenant_id FROM identity.credentials WHERE user_id = $1', [userId])).rows[0] ?? null;

/** creates a tenant, its built-in role and the owner's membership in the unit of work */
export const createTenant = async (kernel: Kernel, uow: UnitOfWork, o: { tenantId: string; name: string; slug: string; ownerId: string; roleName: string; permissions: string[] }) => {
  const roleId = kernel.ids.next();
  uow.decide(Tenant, await uow.load(Tenant, tenantStream(o.tenantId)), { type: 'CreateTenant', tenantId: o.tenantId, name: o.name, slug: o.slug, ownerId: o.ownerId, ownerRoleId: roleId });
  uow.decide(Role, await uow.load(Role, roleStream(o.tenantId, roleId)), {
    type: 'CreateRole', roleId, tenantId: o.tenantId, name: o.roleName, description: `Built-in role: ${o.roleName}`, permissions: o.permissions, builtIn: true, createdBy: o.ownerId,
  });
  uow.decide(Membership, await uow.load(Membership, memberStream(o.tenantId, o.ownerId)), { type: 'AddMember', userId: o.ownerId, tenantId: o.tenantId, roleIds: [roleId], via: 'register' });
  return roleId;
};

export const slugify = (name: string): string => name.toLowerCase().normalize('NFKD').replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 40) || 'tenant';

export interface RegisterInput { email: string; password: string; firstName?: string; lastName?: string; tenantName?: string; tenantSlug?: string }

/** Register: a user, a tenant and its Owner role (every non-platform permission), then a first session. */
export const register = async (kernel: Kernel, traceId: string, input: RegisterInput) => {
  assertPasswordPolicy(input.password);
  const email = normalizeEmail(input.email);
  const passwordHash = await passwordWork(kernel, email, () => hashPassword(input.password));
  const userId = kernel.ids.next();
  const tenantId = kernel.ids.next();
  const tenantName = input.tenantName ?? `${input.firstName ?? email.split('@')[0]}'s workspace`;
  const slug = input.tenantSlug ?? `${slugify(tenantName)}-${tenantId.slice(-8)}`;
  await kernel.commands.run(anonymousMeta(tenantId, traceId, userId), async (uow) => {
    if (await findTenantBySlug(uow.tx, slug)) throw identityErrors.slugTaken();
    await claimEmail(uow.tx, userId, email, passwordHash);
    const p = platformUnit(kernel, uow);
    p.decide(Account, await p.load(Account, accountStream(userId)), {
      type: 'CreateAccount', userId, tenantId, email, firstName: input.firstName ?? '', lastName: input.lastName ?? '', emailVerified: false, hasPassword: true, via: 'register',
    });
    await flushPlatform(kernel, uow, p);
    await createTenant(kernel, uow, { tenantId, name: tenantName, slug, ownerId: userId, roleName: OWNER_ROLE, permissions: ownerPermissions(kernel) });
  });
  await sendVerificationMail(kernel, userId, email);
  const tokens = await issueTokens(kernel, kernel.db, { userId, tenantId });
  await recordLogin(kernel, traceId, userId, tenantId, 'register');
  return { tokens, tenant: { id: tenantId, name: tenantName, slug } };
};

export const sendVerificationMail = async (kernel: Kernel, userId: string, email: string): Promise<void> => {
  const { token } = await createOneTimeToken(kernel, kernel.db, { purpose: 'verify-email', ttlMs: LIFETIMES.verifyEmailMs, userId, email });
  sendLater(kernel, {
    to: email, subject: 'Verify your email address', headers: { 'X-Platform-Token': token, 'X-Platform-Purpose': 'verify-email' },
    text: `Confirm your address: ${link(kernel, 'verify-email', token)}\nThe link is valid for 24 hours.`,
  });
};

export const recordLogin = async (kernel: Kernel, traceId: string, userId: string, tenantId: string, method: string): Promise<void> => {
  await kernel.commands.run(anonymousMeta(PLATFORM_TENANT_ID, traceId, userId), async (uow) => {
    uow.decide(Account, await uow.load(Account, accountStream(userId)), { type: 'RecordLogin', tenantId, method });
  });
};

export type SessionOutcome =
  | { kind: 'tokens'; tokens: IssuedTokens }
  | { kind: 'select'; sessionToken: string; tenants: TenantChoice[] };

/**
 * After the credentials are proven: one tenant (or the remembered one) gives tokens at once;
 * several give a 5-minute session token and the choice.
 */
export const openSession = async (kernel: Kernel, traceId: string, userId: string, method: string): Promise<SessionOutcome> => {
  const tenants = await tenantsOfUser(kernel.db, userId);
  if (tenants.length === 0) {
    // a member locked by the tenant is told so (spec 000: 403 account-locked); a deleted one is not let in
    if ((await membershipStatuses(kernel.db, userId)).includes('locked')) throw identityErrors.accountLocked('Your membership of this tenant is locked by its administrator.');
    throw identityErrors.invalidCredentials();
  }
  const remembered = (await credentialsOf(kernel.db, userId))?.remembered_tenant_id;
  const chosen = tenants.length === 1 ? tenants[0] : tenants.find((t) => t.id === remembered);
  if (chosen) {
    // the refresh-token row and the auth.user.logged_in event commit together (one transaction, one WAL flush)
    const tokens = await kernel.commands.run(anonymousMeta(PLATFORM_TENANT_ID, traceId, userId), async (uow) => {
      uow.decide(Account, await uow.load(Account, accountStream(userId)), { type: 'RecordLogin', tenantId: chosen.id, method });
      return issueTokens(kernel, uow.tx, { userId, tenantId: chosen.id });
    });
    return { kind: 'tokens', tokens };
  }
  const { token } = await createOneTimeToken(kernel, kernel.db, { purpose: 'session', ttlMs: LIFETIMES.sessionTokenMs, userId, payload: { method } });
  return { kind: 'select', sessionToken: token, tenants };
};

/**
 * A locked account (the third recovery lockout, spec 000) cannot log in. The 1-hour lock after
 * failed recovery attempts stops recovery only: password login stays open to the holder, with
 * MFA still required — a stranger's junk recovery attempts must not lock a person out.
 */
export const assertNotLocked = async (kernel: Kernel, userId: string): Promise<AccountRow> => {
  const account = await findAccount(kernel.db, userId);
  if (!account || account.status === 'locked') throw identityErrors.accountLocked();
  return account;
};

/** a TOTP code of the user, each accepted once (replay cache, 90 s, shared through Redis when configured) */
export const checkTotp = async (kernel: Kernel, userId: string, code: string): Promise<boolean> => {
  const { rows } = await kernel.db.query<{ sealed_secret: string }>('SELECT sealed_secret FROM identity.mfa_secrets WHERE user_id = $1', [userId]);
  const sealed = rows[0]?.sealed_secret;
  if (!sealed) return false;
  const secret = identity(kernel).box.openString(sealed, `totp:${userId}`);
  const counter = verifyTotp(secret, code, Math.floor(kernel.clock.now().getTime() / 1000));
  if (counter === null) return false;
  return kernel.engines.cache.setIfAbsent(`identity:totp:${userId}:${counter}`, '1', 90_000);
};

export const login = async (kernel: Kernel, traceId: string, input: { email: string; password: string; mfaCode?: string }): Promise<SessionOutcome> => {
  const email = normalizeEmail(input.email);
  const creds = await credentialsByEmail(kernel.db, email);
  const hash = creds?.password_hash;
  if (!creds || !hash) {
    await passwordWork(kernel, email, () => dummyVerify(input.password));
    throw identityErrors.invalidCredentials();
  }
  const check = await passwordWork(kernel, creds.user_id, () => verifyPassword(hash, input.password));
  if (!check.ok) throw identityErrors.invalidCredentials();
  if (check.needsRehash) {
    const rehashed = await passwordWork(kernel, creds.user_id, () => hashPassword(input.password));
    await kernel.db.query('UPDATE identity.credentials SET password_hash = $2, updated_at = now() WHERE user_id = $1', [creds.user_id, rehashed]);
  }
  const account = await assertNotLocked(kernel, creds.user_id);
  if (account.mfa_enabled) {
    if (input.mfaCode === undefined || input.mfaCode === '') {
      const { token } = await createOneTimeToken(kernel, kernel.db, { purpose: 'mfa', ttlMs: LIFETIMES.mfaTokenMs, userId: creds.user_id });
      throw identityErrors.mfaRequired(token);
    }
    if (!(await checkTotp(kernel, creds.user_id, input.mfaCode))) throw identityErrors.mfaInvalid();
  }
  return openSession(kernel, traceId, creds.user_id, 'password');
};

/** the second step of an MFA login: {mfa_token, code} → snake_case pair (or tenant selection) */
export const completeMfaLogin = async (kernel: Kernel, traceId: string, mfaToken: string, code: string): Promise<SessionOutcome> => {
  const row = await peekOneTimeToken(kernel, kernel.db, 'mfa', mfaToken, 'mfa_token');
  if (!(await checkTotp(kernel, row.user_id!, code))) throw identityErrors.mfaInvalid();
  await consumeOneTimeToken(kernel, kernel.db, 'mfa', mfaToken, 'mfa_token');
  await assertNotLocked(kernel, row.user_id!);
  return openSession(kernel, traceId, row.user_id!, 'password+totp');
};

export const selectTenant = async (kernel: Kernel, traceId: string, input: { sessionToken: string; tenantId: string; rememberChoice?: boolean }): Promise<IssuedTokens> => {
  const row = await peekOneTimeToken(kernel, kernel.db, 'session', input.sessionToken, 'session token');
  const userId = row.user_id!;
  const tenants = await tenantsOfUser(kernel.db, userId);
  if (!tenants.some((t) => t.id === input.tenantId)) throw commonErrors.notFound('The tenant does not exist.');
  await consumeOneTimeToken(kernel, kernel.db, 'session', input.sessionToken, 'session token');
  if (input.rememberChoice !== undefined) {
    await kernel.db.query('UPDATE identity.credentials SET remembered_tenant_id = $2, updated_at = now() WHERE user_id = $1', [userId, input.rememberChoice ? input.tenantId : null]);
  }
  const tokens = await issueTokens(kernel, kernel.db, { userId, tenantId: input.tenantId });
  await recordLogin(kernel, traceId, userId, input.tenantId, String(row.payload.method ?? 'password'));
  return tokens;
};

export const switchTenant = async (kernel: Kernel, userId: string, tenantId: string, impersonatorId?: string): Promise<IssuedTokens> => {
  if (impersonatorId) throw commonErrors.forbidden('An impersonation session cannot switch tenants.');
  const tenants = await tenantsOfUser(kernel.db, userId);
  if (!tenants.some((t) => t.id === tenantId)) throw commonErrors.notFound('The tenant does not exist.');
  return issueTokens(kernel, kernel.db, { userId, tenantId });
};

/**
 * Recovery login with a single-use code. The MFA stream is locked for the check, so of 20
 * concurrent uses of one code exactly one succeeds — and the 19 others are replays, not failed
 * guesses. Only wrong codes of an account that has codes count, each distinct code once: 5 in 15
 * minutes lock recovery for an hour and alert the tenant owners; the third lockout locks the
 * account and alerts the platform owner. Attempts are also limited per client address, and every
 * refusal takes at least RECOVERY.failureFloorMs, so timing does not tell a registered email.
 */
export const recoveryLogin = async (kernel: Kernel, traceId: string, clientAddress: string, input: { email: string; recoveryCode: string }): Promise<SessionOutcome> => {
  const started = performance.now();
  try {
    return await attemptRecovery(kernel, traceId, clientAddress, input);
  } catch (error) {
    const wait = RECOVERY.failureFloorMs - (performance.now() - started);
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    throw error;
  }
};

type RecoveryResult = { ok: true } | { ok: false; locked: boolean; lockout: 'none' | 'recovery' | 'account' };

const attemptRecovery = async (kernel: Kernel, traceId: string, clientAddress: string, input: { email: string; recoveryCode: string }): Promise<SessionOutcome> => {
  const perAddress = await kernel.engines.cache.incrWindow(`identity:recovery:addr:${clientAddress}`, RECOVERY.windowMs);
  if (perAddress.count > kernel.config.RECOVERY_ATTEMPTS_PER_ADDRESS) throw commonErrors.rateLimited(Math.max(1, Math.ceil((perAddress.resetAt - Date.now()) / 1000)));
  const code = normalizeRecoveryCode(input.recoveryCode);
  const creds = code ? await credentialsByEmail(kernel.db, input.email) : null;
  if (!code || !creds) throw commonErrors.unauthorized('The recovery code is not valid.');
  const userId = creds.user_id;
  const rt = identity(kernel);
  const now = kernel.clock.now().getTime();
  const result = await kernel.commands.run(anonymousMeta(PLATFORM_TENANT_ID, traceId, userId), async (uow): Promise<RecoveryResult> => {
    const mfa = await uow.load(Mfa, mfaStream(userId), { lock: true });
    const account = await uow.load(Account, accountStream(userId));
    if (recoveryLockRemaining(mfa.state, now) > 0 || account.state.status === 'locked') return { ok: false, locked: true, lockout: 'none' };
    const { rows } = await uow.tx.query<{ code_hash: string; used_at: Date | null }>('SELECT code_hash, used_at FROM identity.recovery_codes WHERE user_id = $1', [userId]);
    if (mfa.state.status !== 'enabled' || rows.length === 0) return { ok: false, locked: false, lockout: 'none' };
    const index = rt.recovery.verify(userId, code, rows.map((r) => r.code_hash));
    const matched = rows[index];
    if (matched) {
      // a used code (or one a concurrent request is using right now) is a replay: refused, never counted
      const consumed = matched.used_at === null && (await uow.tx.query('UPDATE identity.recovery_codes SET used_at = $3 WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL', [userId, matched.code_hash, new Date(now)])).rowCount === 1;
      if (!consumed) return { ok: false, locked: false, lockout: 'none' };
      uow.decide(Mfa, mfa, { type: 'UseRecoveryCode', userId, remaining: rows.filter((r) => r.used_at === null).length - 1, now });
      return { ok: true };
    }
    const { events, state } = uow.decide(Mfa, mfa, { type: 'FailRecovery', userId, now, fingerprint: rt.recovery.hash(userId, code) });
    const locked = events.find((e) => e.type === 'auth.mfa.recovery_locked');
    if (locked?.type !== 'auth.mfa.recovery_locked') return { ok: false, locked: false, lockout: 'none' };
    if (locked.data.accountLocked) {
      uow.decide(Account, account, { type: 'LockAccount', reason: `${state.lockouts} recovery lockouts` });
      uow.afterCommit(() => bumpAccessEpoch(kernel, { userId }));
    }
    return { ok: false, locked: false, lockout: locked.data.accountLocked ? 'account' : 'recovery' };
  });
  if (!result.ok) {
    if (result.lockout !== 'none') alertLockout(kernel, userId, creds.email, result.lockout === 'account');
    if (result.locked) throw identityErrors.accountLocked('Too many failed recovery attempts; recovery is locked for now.');
    // the attempt that triggers a lock is still answered as a wrong code; the next ones get 403
    throw commonErrors.unauthorized('The recovery code is not valid.');
  }
  sendLater(kernel, { to: creds.email, subject: 'A recovery code was used', text: `A recovery code was used to sign in to your account at ${new Date(now).toISOString()}. If this was not you, reset your password and regenerate your codes.` });
  return openSession(kernel, traceId, userId, 'recovery-code');
};

const alertLockout = (kernel: Kernel, userId: string, email: string, accountLocked: boolean): void => {
  sendLater(kernel, async () => {
    const tenants = await tenantsOfUser(kernel.db, userId);
    const owners = await ownerEmails(kernel.db, tenants.map((t) => t.id).filter((t) => t !== PLATFORM_TENANT_ID));
    const mails = owners.length ? [{
      to: owners, subject: 'Security alert: recovery attempts locked an account', headers: { 'X-Platform-Alert': 'recovery-lockout' },
      text: `${RECOVERY.maxAttempts} failed recovery-code attempts within 15 minutes locked recovery for ${email} for one hour.`,
    }] : [];
    if (accountLocked) {
      const platformOwners = await ownerEmails(kernel.db, [PLATFORM_TENANT_ID]);
      if (platformOwners.length) {
        mails.push({ to: platformOwners, subject: 'Security alert: an account was locked', headers: { 'X-Platform-Alert': 'account-locked' },
          text: `The account ${email} (${userId}) is locked after ${RECOVERY.lockoutsBeforeLock} recovery lockouts (${RECOVERY.lockoutsBeforeLock * RECOVERY.maxAttempts} failed attempts).` });
      }
    }
    return mails;
  });
};

/** `platform owner create`: the platform tenant and its Platform Owner role (platform.*) on first use, then the owner's membership */
export const createPlatformOwner = async (kernel: Kernel, input: { email: string; password: string }): Promise<{ userId: string; created: boolean }> => {
  const email = normalizeEmail(input.email);
  const existing = await credentialsByEmail(kernel.db, email);
  if (!existing) assertPasswordPolicy(input.password);
  const passwordHash = existing ? null : await hashPassword(input.password);
  const userId = existing?.user_id ?? kernel.ids.next();
  await kernel.commands.run(anonymousMeta(PLATFORM_TENANT_ID, 'cli', 'cli'), async (uow) => {
    uow.afterCommit(() => bumpAccessEpoch(kernel, { userId }));
    const tenant = await uow.load(Tenant, tenantStream(PLATFORM_TENANT_ID));
    if (!existing) {
      await claimEmail(uow.tx, userId, email, passwordHash);
      uow.decide(Account, await uow.load(Account, accountStream(userId)), {
        type: 'CreateAccount', userId, tenantId: PLATFORM_TENANT_ID, email, firstName: 'Platform', lastName: 'Owner', emailVerified: true, hasPassword: true, via: 'cli',
      });
    }
    if (tenant.state.status === 'none') {
      await createTenant(kernel, uow, { tenantId: PLATFORM_TENANT_ID, name: 'Platform', slug: 'platform', ownerId: userId, roleName: PLATFORM_OWNER_ROLE, permissions: ['platform.*'] });
      return;
    }
    const ownerRoleId = tenant.state.ownerRoleId;
    const member = await uow.load(Membership, memberStream(PLATFORM_TENANT_ID, userId));
    if (member.state.status === 'none') uow.decide(Membership, member, { type: 'AddMember', userId, tenantId: PLATFORM_TENANT_ID, roleIds: [ownerRoleId], via: 'cli' });
    else uow.decide(Membership, member, { type: 'AssignRole', roleId: ownerRoleId, roleName: PLATFORM_OWNER_ROLE });
  });
  return { userId, created: !existing };
};
