import { LIFETIMES, PLATFORM_TENANT_ID, VERIFY_RESEND } from '../../domain/identity/constants';
import { identityErrors } from '../../domain/identity/errors';
import { commonErrors } from '../../domain/shared/errors';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import type { Kernel } from '../../infra/kernel';
import { hashPassword, verifyPassword } from '../../infra/security/passwords';
import { findAccount, findRole, findRolesByName, findUser } from '../../projections/identity/queries';
import { assertPasswordPolicy, claimEmail, credentialsByEmail, normalizeEmail, recordLogin, sendVerificationMail } from './accounts';
import { Account, accountStream, anonymousMeta, flushPlatform, Membership, memberStream, platformUnit } from './aggregates';
import { link, sendLater } from './mail';
import { bumpAccessEpoch } from './runtime';
import type { IssuedTokens } from './tokens';
import { consumeOneTimeToken, createOneTimeToken, issueTokens, peekOneTimeToken, revokeAllRefreshTokens } from './tokens';

/** Email verification, password reset and invitations (spec 000, Security flows). */

export const requestVerifyEmail = async (kernel: Kernel, userId: string): Promise<void> => {
  const { count, resetAt } = await kernel.engines.cache.incrWindow(`identity:verify-resend:${userId}`, VERIFY_RESEND.windowMs);
  if (count > VERIFY_RESEND.max) throw commonErrors.rateLimited(Math.max(1, Math.ceil((resetAt - Date.now()) / 1000)));
  const account = await findAccount(kernel.db, userId);
  if (!account || account.email_verified) return;
  await sendVerificationMail(kernel, userId, account.email);
};

export const verifyEmail = async (kernel: Kernel, traceId: string, token: string) => {
  await kernel.commands.run(anonymousMeta(PLATFORM_TENANT_ID, traceId), async (uow) => {
    const row = await consumeOneTimeToken(kernel, uow.tx, 'verify-email', token, 'verification token');
    uow.decide(Account, await uow.load(Account, accountStream(row.user_id!)), { type: 'VerifyEmail', email: row.email! });
    uow.afterCommit(() => bumpAccessEpoch(kernel, { userId: row.user_id! }));
  });
  return { email_verified: true as const };
};

/**
 * Always 202 at once: the lookup, the token and the mail happen after the answer, so neither the
 * body nor the timing says whether the email is registered.
 */
export const requestReset = (kernel: Kernel, email: string): void => {
  sendLater(kernel, async () => {
    const creds = await credentialsByEmail(kernel.db, email);
    if (!creds) return null;
    const { token } = await createOneTimeToken(kernel, kernel.db, { purpose: 'reset', ttlMs: LIFETIMES.resetMs, userId: creds.user_id, email: creds.email });
    return {
      to: creds.email, subject: 'Reset your password', headers: { 'X-Platform-Token': token, 'X-Platform-Purpose': 'reset' },
      text: `Choose a new password: ${link(kernel, '/reset-password', token)}\nThe link is valid for one hour. If you did not ask for it, ignore this mail.`,
    };
  });
};

export const resetPassword = async (kernel: Kernel, traceId: string, input: { token: string; password: string }) => {
  assertPasswordPolicy(input.password);
  await peekOneTimeToken(kernel, kernel.db, 'reset', input.token, 'reset token');
  const passwordHash = await hashPassword(input.password);
  await kernel.commands.run(anonymousMeta(PLATFORM_TENANT_ID, traceId), async (uow) => {
    const row = await consumeOneTimeToken(kernel, uow.tx, 'reset', input.token, 'reset token');
    const userId = row.user_id!;
    await uow.tx.query('UPDATE identity.credentials SET password_hash = $2, updated_at = now() WHERE user_id = $1', [userId, passwordHash]);
    await revokeAllRefreshTokens(kernel, uow.tx, userId);
    uow.decide(Account, await uow.load(Account, accountStream(userId)), { type: 'ChangePassword', reason: 'reset' });
    uow.afterCommit(() => bumpAccessEpoch(kernel, { userId }));
  });
  return { message: 'The password has been changed; sign in again.' };
};

/** role ids from {role_id} or {roles: [names]}; unknown ones are 404 (another tenant's ids too) */
export const resolveRoleIds = async (kernel: Kernel, tenantId: string, input: { role_id?: string; roles?: string[]; role_ids?: string[] }): Promise<{ id: string; name: string }[]> => {
  const ids = [...(input.role_id ? [input.role_id] : []), ...(input.role_ids ?? [])];
  const found: { id: string; name: string }[] = [];
  for (const id of ids) {
    const role = await findRole(kernel.db, tenantId, id);
    if (!role) throw commonErrors.notFound('The role does not exist.');
    found.push({ id: role.id, name: role.name });
  }
  if (input.roles?.length) {
    const byName = await findRolesByName(kernel.db, tenantId, input.roles);
    const missing = input.roles.filter((n) => !byName.some((r) => r.name === n));
    if (missing.length) throw commonErrors.notFound(`Unknown role: ${missing.join(', ')}.`);
    found.push(...byName.map((r) => ({ id: r.id, name: r.name })));
  }
  return found.filter((r, i) => found.findIndex((x) => x.id === r.id) === i);
};

/**
 * An invitation: 202 with the invite for anyone not yet a member (registered elsewhere or not:
 * the same answer), 202 without a body and a duplicate-invite notice for an existing member.
 * No password hashing on this path, so both answers take the same time.
 */
export const invite = async (kernel: Kernel, tenantId: string, inviterId: string, input: { email: string; role_id?: string; roles?: string[] }) => {
  const email = normalizeEmail(input.email);
  const roles = await resolveRoleIds(kernel, tenantId, input);
  if (roles.length === 0) throw commonErrors.validation([{ field: 'role_id', message: 'role_id or roles is required', code: 'REQUIRED' }]);
  const { rows } = await kernel.db.query<{ user_id: string }>(
    `SELECT m.user_id FROM rm.iam_members m JOIN rm.iam_accounts a ON a.tenant_id = $2 AND a.id = m.user_id WHERE m.tenant_id = $1 AND lower(a.email) = $3`,
    [tenantId, PLATFORM_TENANT_ID, email]);
  if (rows[0]) {
    sendLater(kernel, { to: email, subject: 'You are already a member', headers: { 'X-Platform-Purpose': 'duplicate-invite' },
      text: 'Someone invited you to a workspace you already belong to. Sign in as usual; nothing else is needed.' });
    return null;
  }
  const inviteId = kernel.ids.next();
  const { token, expiresAt } = await createOneTimeToken(kernel, kernel.db, { purpose: 'invite', ttlMs: LIFETIMES.inviteMs, tenantId, email, payload: { inviteId, roleIds: roles.map((r) => r.id), inviterId } });
  sendLater(kernel, { to: email, subject: 'You are invited', headers: { 'X-Platform-Token': token, 'X-Platform-Purpose': 'invite' },
    text: `You are invited to join a workspace: ${link(kernel, '/accept-invite', token)}\nThe invitation is valid for 72 hours.` });
  return { invite_id: inviteId, email, expires_at: expiresAt.toISOString() };
};

/**
 * Accepting an invitation creates the account (email verified: the token proves the address) or,
 * for a person registered elsewhere, checks their password; then the membership with the invited roles.
 */
export const acceptInvite = async (kernel: Kernel, traceId: string, input: { token: string; name: string; password: string }): Promise<IssuedTokens> => {
  const row = await peekOneTimeToken(kernel, kernel.db, 'invite', input.token, 'invitation token');
  const email = row.email!;
  const tenantId = row.tenant_id!;
  const existing = await credentialsByEmail(kernel.db, email);
  let passwordHash: string | null = null;
  if (existing) {
    if (!existing.password_hash || !(await verifyPassword(existing.password_hash, input.password)).ok) throw identityErrors.invalidCredentials();
  } else {
    assertPasswordPolicy(input.password);
    passwordHash = await hashPassword(input.password);
  }
  const userId = existing?.user_id ?? kernel.ids.next();
  const [firstName = '', ...rest] = input.name.trim().split(/\s+/);
  await kernel.commands.run(anonymousMeta(tenantId, traceId, userId), async (uow) => {
    const claimed = await consumeOneTimeToken(kernel, uow.tx, 'invite', input.token, 'invitation token');
    const p = platformUnit(kernel, uow);
    const account = await p.load(Account, accountStream(userId));
    if (existing) p.decide(Account, account, { type: 'VerifyEmail', email });
    else {
      await claimEmail(uow.tx, userId, email, passwordHash);
      p.decide(Account, account, { type: 'CreateAccount', userId, tenantId, email, firstName, lastName: rest.join(' '), emailVerified: true, hasPassword: true, via: 'invite' });
    }
    await flushPlatform(kernel, uow, p);
    const roleIds = ((claimed.payload.roleIds as string[] | undefined) ?? []);
    const live = [];
    for (const id of roleIds) if (await findRole(uow.tx, tenantId, id)) live.push(id);
    uow.decide(Membership, await uow.load(Membership, memberStream(tenantId, userId)), { type: 'AddMember', userId, tenantId, roleIds: live, via: 'invite' });
    uow.afterCommit(() => bumpAccessEpoch(kernel, { userId }));
  });
  const tokens = await issueTokens(kernel, kernel.db, { userId, tenantId });
  await recordLogin(kernel, traceId, userId, tenantId, 'invite');
  return tokens;
};

/** POST /users: a new account, or an account of another tenant added as member */
export const createUser = async (kernel: Kernel, uow: UnitOfWork, input: { email: string; firstName?: string; lastName?: string; password?: string; roles?: string[]; role_ids?: string[] }) => {
  const tenantId = uow.meta.tenantId;
  const email = normalizeEmail(input.email);
  const roles = await resolveRoleIds(kernel, tenantId, input);
  const existing = await credentialsByEmail(uow.tx, email);
  const userId = existing?.user_id ?? kernel.ids.next();
  if (!existing) {
    if (input.password !== undefined) assertPasswordPolicy(input.password);
    await claimEmail(uow.tx, userId, email, input.password === undefined ? null : await hashPassword(input.password));
    const p = platformUnit(kernel, uow);
    p.decide(Account, await p.load(Account, accountStream(userId)), {
      type: 'CreateAccount', userId, tenantId, email, firstName: input.firstName ?? '', lastName: input.lastName ?? '', emailVerified: false, hasPassword: input.password !== undefined, via: 'admin',
    });
    await flushPlatform(kernel, uow, p);
  }
  uow.decide(Membership, await uow.load(Membership, memberStream(tenantId, userId)), { type: 'AddMember', userId, tenantId, roleIds: roles.map((r) => r.id), via: 'admin' });
  await uow.flush(kernel.projections);
  if (!existing && input.password === undefined) {
    const { token } = await createOneTimeToken(kernel, uow.tx, { purpose: 'reset', ttlMs: LIFETIMES.inviteMs, userId, email });
    sendLater(kernel, { to: email, subject: 'Your account is ready', headers: { 'X-Platform-Token': token, 'X-Platform-Purpose': 'reset' },
      text: `An account was created for you. Choose a password: ${link(kernel, '/reset-password', token)}` });
  }
  return findUser(uow.tx, tenantId, userId);
};
