import {
  LIFETIMES,
  OWNER_ROLE,
  PLATFORM_OWNER_ROLE,
  PLATFORM_TENANT_ID,
  VERIFY_RESEND,
} from '../../domain/identity/constants';
import { identityErrors } from '../../domain/identity/errors';
import type { CamelPair, UserView } from '../../domain/identity/views';
import { toUser } from '../../domain/identity/views';
import { commonErrors } from '../../domain/shared/errors';
import { bumpAccessEpoch } from '../../projections/identity/shared/runtime';
import type { Kernel } from '../../infra/kernel';
import { hashPassword } from '../../infra/security/passwords';
import {
  Account,
  accountStream,
  anonymousMeta,
  flushPlatform,
  Membership,
  memberStream,
  platformUnit,
  Tenant,
  tenantStream,
} from './aggregates';
import { findAccount, findTenantBySlug } from './lookups';
import { findUser } from '../../projections/identity/queries';
import { link, sendLater } from './mail';
import { assertPasswordPolicy, claimEmail, normalizeEmail, passwordWork } from './passwords';
import { credentials } from './repositories/credentials';
import { oneTimeTokens } from './repositories/one-time-tokens';
import { refreshTokens } from './repositories/refresh-tokens';
import { createTenant, ownerPermissions, slugify } from './tenant';
import { camelPair, consumeOneTimeToken, createOneTimeToken, issueTokens, peekOneTimeToken, userOf } from './tokens';

/** Accounts: registration, the platform owner, email verification and password reset (spec 000, Security flows). */

export interface RegisterInput {
  email: string;
  password: string;
  firstName?: string;
  lastName?: string;
  tenantName?: string;
  tenantSlug?: string;
}
export type Registered = CamelPair & { user: UserView; tenant: { id: string; name: string; slug: string } };

/** Register: a user, a tenant and its Owner role (every non-platform permission), then a first session. */
export const register = async (kernel: Kernel, traceId: string, input: RegisterInput): Promise<Registered> => {
  assertPasswordPolicy(input.password);
  const email = normalizeEmail(input.email);
  const passwordHash = await passwordWork(kernel, email, () => hashPassword(input.password));
  const userId = kernel.ids.next();
  const tenantId = kernel.ids.next();
  const tenantName = input.tenantName ?? `${input.firstName ?? email.split('@')[0]}'s workspace`;
  const slug = input.tenantSlug ?? `${slugify(tenantName)}-${tenantId.slice(-8)}`;
  await kernel.commands.run(anonymousMeta(tenantId, traceId, userId), async (uow) => {
    if (await findTenantBySlug(uow.tx, slug)) throw identityErrors.slugTaken();
    await claimEmail(kernel, uow.tx, userId, email, passwordHash);
    const p = platformUnit(kernel, uow);
    p.decide(Account, await p.load(Account, accountStream(userId)), {
      type: 'CreateAccount',
      userId,
      tenantId,
      email,
      firstName: input.firstName ?? '',
      lastName: input.lastName ?? '',
      emailVerified: false,
      hasPassword: true,
      via: 'register',
    });
    await flushPlatform(kernel, uow, p);
    await createTenant(kernel, uow, {
      tenantId,
      name: tenantName,
      slug,
      ownerId: userId,
      roleName: OWNER_ROLE,
      permissions: ownerPermissions(kernel),
    });
  });
  await sendVerificationMail(kernel, userId, email);
  const tokens = await issueTokens(kernel, kernel.db, { userId, tenantId });
  await recordLogin(kernel, traceId, userId, tenantId, 'register');
  const user = await findUser(kernel.db, tenantId, userId);
  if (!user) throw commonErrors.notFound('The user does not exist.');
  return { ...camelPair(tokens), user: toUser(user), tenant: { id: tenantId, name: tenantName, slug } };
};

export const recordLogin = async (
  kernel: Kernel,
  traceId: string,
  userId: string,
  tenantId: string,
  method: string,
): Promise<void> => {
  await kernel.commands.run(anonymousMeta(PLATFORM_TENANT_ID, traceId, userId), async (uow) => {
    uow.decide(Account, await uow.load(Account, accountStream(userId)), { type: 'RecordLogin', tenantId, method });
  });
};

export const sendVerificationMail = async (kernel: Kernel, userId: string, email: string): Promise<void> => {
  const { token } = await createOneTimeToken(kernel, kernel.db, {
    purpose: 'verify-email',
    ttlMs: LIFETIMES.verifyEmailMs,
    userId,
    email,
  });
  sendLater(kernel, {
    to: email,
    subject: 'Verify your email address',
    headers: { 'X-Platform-Token': token, 'X-Platform-Purpose': 'verify-email' },
    text: `Confirm your address: ${link(kernel, 'verify-email', token)}\nThe link is valid for 24 hours.`,
  });
};

/** 429 of the resend limit, with that limit's own counters (not the gateway's) */
const resendLimited = (count: number, resetAt: number, now: number) => {
  const retryAfter = Math.max(1, Math.ceil((resetAt - now) / 1000));
  const error = commonErrors.rateLimited(retryAfter);
  Object.assign(error.headers ?? {}, {
    'X-RateLimit-Limit': String(VERIFY_RESEND.max),
    'X-RateLimit-Remaining': String(Math.max(0, VERIFY_RESEND.max - count)),
    'X-RateLimit-Reset': String(Math.ceil(resetAt / 1000)),
  });
  return error;
};

export const requestVerifyEmail = async (kernel: Kernel, userId: string): Promise<void> => {
  const { count, resetAt } = await kernel.engines.cache.incrWindow(
    `identity:verify-resend:${userId}`,
    VERIFY_RESEND.windowMs,
  );
  if (count > VERIFY_RESEND.max) throw resendLimited(count, resetAt, kernel.clock.now().getTime());
  const account = await findAccount(kernel.db, userId);
  if (!account || account.email_verified) return;
  await sendVerificationMail(kernel, userId, account.email);
};

/**
 * A verification token proves the address it was sent to: once the account has moved to another
 * address it verifies nothing, and it is refused without being spent.
 */
export const verifyEmail = async (
  kernel: Kernel,
  traceId: string,
  token: string,
): Promise<{ email_verified: true }> => {
  const what = 'verification token';
  const peeked = await peekOneTimeToken(kernel, kernel.db, 'verify-email', token, what);
  const account = await findAccount(kernel.db, userOf(peeked, what));
  if (!account || account.email !== peeked.email)
    throw identityErrors.tokenInvalid('verification token (it was issued for an address the account no longer uses)');
  await kernel.commands.run(anonymousMeta(PLATFORM_TENANT_ID, traceId), async (uow) => {
    const row = await consumeOneTimeToken(kernel, uow.tx, 'verify-email', token, what);
    const userId = userOf(row, what);
    uow.decide(Account, await uow.load(Account, accountStream(userId)), {
      type: 'VerifyEmail',
      email: row.email ?? '',
    });
    uow.afterCommit(() => bumpAccessEpoch(kernel, { userId }));
  });
  return { email_verified: true as const };
};

/**
 * Always 202 at once: the lookup, the token and the mail happen after the answer, so neither the
 * body nor the timing says whether the email is registered.
 */
export const requestReset = (kernel: Kernel, email: string): void => {
  sendLater(kernel, async () => {
    const creds = await credentials.byEmail(kernel.db, normalizeEmail(email));
    if (!creds) return null;
    const { token } = await createOneTimeToken(kernel, kernel.db, {
      purpose: 'reset',
      ttlMs: LIFETIMES.resetMs,
      userId: creds.userId,
      email: creds.email,
    });
    return {
      to: creds.email,
      subject: 'Reset your password',
      headers: { 'X-Platform-Token': token, 'X-Platform-Purpose': 'reset' },
      text: `Choose a new password: ${link(kernel, 'reset-password', token)}\nThe link is valid for one hour. If you did not ask for it, ignore this mail.`,
    };
  });
};

/**
 * A reset proves control of the address: it sets the password, ends every session, spends every
 * other reset link of the account and lifts a lock left by failed recovery attempts (MFA still
 * guards the next login).
 */
export const resetPassword = async (
  kernel: Kernel,
  traceId: string,
  input: { token: string; password: string },
): Promise<{ message: string }> => {
  const what = 'reset token';
  assertPasswordPolicy(input.password);
  const peeked = await peekOneTimeToken(kernel, kernel.db, 'reset', input.token, what);
  const passwordHash = await passwordWork(kernel, userOf(peeked, what), () => hashPassword(input.password));
  await kernel.commands.run(anonymousMeta(PLATFORM_TENANT_ID, traceId), async (uow) => {
    const id = userOf(await consumeOneTimeToken(kernel, uow.tx, 'reset', input.token, what), what);
    const at = kernel.clock.now();
    await credentials.setPasswordHash(uow.tx, id, passwordHash, at);
    await oneTimeTokens.deleteOfUser(uow.tx, 'reset', id);
    await refreshTokens.revokeAllOfUser(uow.tx, id, at);
    const account = await uow.load(Account, accountStream(id));
    uow.decide(Account, account, { type: 'ChangePassword', reason: 'reset' });
    uow.decide(Account, account, { type: 'UnlockAccount' });
    uow.afterCommit(() => bumpAccessEpoch(kernel, { userId: id }));
  });
  return { message: 'The password has been changed; sign in again.' };
};

/** `platform owner create`: the platform tenant and its Platform Owner role (platform.*) on first use, then the owner's membership */
export const createPlatformOwner = async (
  kernel: Kernel,
  input: { email: string; password: string },
): Promise<{ userId: string; created: boolean }> => {
  const email = normalizeEmail(input.email);
  const existing = await credentials.byEmail(kernel.db, email);
  if (!existing) assertPasswordPolicy(input.password);
  const passwordHash = existing ? null : await hashPassword(input.password);
  const userId = existing?.userId ?? kernel.ids.next();
  await kernel.commands.run(anonymousMeta(PLATFORM_TENANT_ID, 'cli', 'cli'), async (uow) => {
    uow.afterCommit(() => bumpAccessEpoch(kernel, { userId }));
    const tenant = await uow.load(Tenant, tenantStream(PLATFORM_TENANT_ID));
    if (!existing) {
      await claimEmail(kernel, uow.tx, userId, email, passwordHash);
      uow.decide(Account, await uow.load(Account, accountStream(userId)), {
        type: 'CreateAccount',
        userId,
        tenantId: PLATFORM_TENANT_ID,
        email,
        firstName: 'Platform',
        lastName: 'Owner',
        emailVerified: true,
        hasPassword: true,
        via: 'cli',
      });
    }
    if (tenant.state.status === 'none') {
      await createTenant(kernel, uow, {
        tenantId: PLATFORM_TENANT_ID,
        name: 'Platform',
        slug: 'platform',
        ownerId: userId,
        roleName: PLATFORM_OWNER_ROLE,
        permissions: ['platform.*'],
      });
      return;
    }
    const ownerRoleId = tenant.state.ownerRoleId;
    const member = await uow.load(Membership, memberStream(PLATFORM_TENANT_ID, userId));
    if (member.state.status === 'none')
      uow.decide(Membership, member, {
        type: 'AddMember',
        userId,
        tenantId: PLATFORM_TENANT_ID,
        roleIds: [ownerRoleId],
        via: 'cli',
      });
    else uow.decide(Membership, member, { type: 'AssignRole', roleId: ownerRoleId, roleName: PLATFORM_OWNER_ROLE });
  });
  return { userId, created: !existing };
};
