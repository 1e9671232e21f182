import type { Authority } from '../../domain/identity/authority';
import { assertMayGive } from '../../domain/identity/authority';
import { LIFETIMES, LIMITS, PLATFORM_TENANT_ID, VERIFY_RESEND } from '../../domain/identity/constants';
import { identityErrors } from '../../domain/identity/errors';
import { commonErrors } from '../../domain/shared/errors';
import type { Kernel } from '../../infra/kernel';
import { hashPassword, verifyPassword } from '../../infra/security/passwords';
import type { RoleRow } from '../../projections/identity/queries';
import { findAccount, findRole, findRolesByName } from '../../projections/identity/queries';
import { assertPasswordPolicy, claimEmail, credentialsByEmail, normalizeEmail, passwordWork, recordLogin, sendVerificationMail } from './accounts';
import { Account, accountStream, anonymousMeta, flushPlatform, Membership, memberStream, platformUnit } from './aggregates';
import { link, sendLater } from './mail';
import { bumpAccessEpoch } from './runtime';
import type { IssuedTokens } from './tokens';
import { consumeOneTimeToken, createOneTimeToken, issueTokens, peekOneTimeToken, revokeAllRefreshTokens } from './tokens';

/** Email verification, password reset and invitations (spec 000, Security flows). */

/** 429 of the resend limit, with that limit's own counters (not the gateway's) */
const resendLimited = (count: number, resetAt: number, now: number) => {
  const retryAfter = Math.max(1, Math.ceil((resetAt - now) / 1000));
  const error = commonErrors.rateLimited(retryAfter);
  Object.assign(error.headers ?? {}, {
    'X-RateLimit-Limit': String(VERIFY_RESEND.max), 'X-RateLimit-Remaining': String(Math.max(0, VERIFY_RESEND.max - count)), 'X-RateLimit-Reset': String(Math.ceil(resetAt / 1000)),
  });
  return error;
};

export const requestVerifyEmail = async (kernel: Kernel, userId: string): Promise<void> => {
  const { count, resetAt } = await kernel.engines.cache.incrWindow(`identity:verify-resend:${userId}`, VERIFY_RESEND.windowMs);
  if (count > VERIFY_RESEND.max) throw resendLimited(count, resetAt, Date.now());
  const account = await findAccount(kernel.db, userId);
  if (!account || account.email_verified) return;
  await sendVerificationMail(kernel, userId, account.email);
};

/**
 * A verification token proves the address it was sent to: once the account has moved to another
 * address it verifies nothing, and it is refused without being spent.
 */
export const verifyEmail = async (kernel: Kernel, traceId: string, token: string) => {
  const peeked = await peekOneTimeToken(kernel, kernel.db, 'verify-email', token, 'verification token');
  const account = await findAccount(kernel.db, peeked.user_id!);
  if (!account || account.email !== peeked.email) throw identityErrors.tokenInvalid('verification token (it was issued for an address the account no longer uses)');
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
      text: `Choose a new password: ${link(kernel, 'reset-password', token)}\nThe link is valid for one hour. If you did not ask for it, ignore this mail.`,
    };
  });
};

/**
 * A reset proves control of the address: it sets the password, ends every session, spends every
 * other reset link of the account and lifts a lock left by failed recovery attempts (MFA still
 * guards the next login).
 */
export const resetPassword = async (kernel: Kernel, traceId: string, input: { token: string; password: string }) => {
  assertPasswordPolicy(input.password);
  const peeked = await peekOneTimeToken(kernel, kernel.db, 'reset', input.token, 'reset token');
  const passwordHash = await passwordWork(kernel, peeked.user_id!, () => hashPassword(input.password));
  await kernel.commands.run(anonymousMeta(PLATFORM_TENANT_ID, traceId), async (uow) => {
    const row = await consumeOneTimeToken(kernel, uow.tx, 'reset', input.token, 'reset token');
    const id = row.user_id!;
    await uow.tx.query('UPDATE identity.credentials SET password_hash = $2, updated_at = now() WHERE user_id = $1', [id, passwordHash]);
    await uow.tx.query("DELETE FROM identity.one_time_tokens WHERE purpose = 'reset' AND user_id = $1", [id]);
    await revokeAllRefreshTokens(kernel, uow.tx, id);
    const account = await uow.load(Account, accountStream(id));
    uow.decide(Account, account, { type: 'ChangePassword', reason: 'reset' });
    uow.decide(Account, account, { type: 'UnlockAccount' });
    uow.afterCommit(() => bumpAccessEpoch(kernel, { userId: id }));
  });
  return { message: 'The password has been changed; sign in again.' };
};

export interface RoleRequest { role_id?: string; roles?: string[]; role_ids?: string[] }

/** role ids from {role_id}, {role_ids} or {roles: [names]}; unknown ones are 404 (another tenant's ids too) */
export const resolveRoles = async (kernel: Kernel, tenantId: string, input: RoleRequest) => {
  const ids = [...new Set([...(input.role_id ? [input.role_id] : []), ...(input.role_ids ?? [])])];
  const names = [...new Set(input.roles ?? [])];
  if (ids.length + names.length > LIMITS.rolesPerUser) throw identityErrors.rbacLimit('roles per user', LIMITS.rolesPerUser);
  const found: RoleRow[] = [];
  for (const id of ids) {
    const role = await findRole(kernel.db, tenantId, id);
    if (!role) throw commonErrors.notFound('The role does not exist.');
    found.push(role);
  }
  if (names.length) {
    const byName = await findRolesByName(kernel.db, tenantId, names);
    const missing = names.filter((n) => !byName.some((r) => r.name === n));
    if (missing.length) throw commonErrors.notFound(`Unknown role: ${missing.join(', ')}.`);
    found.push(...byName);
  }
  return found.filter((r, i) => found.findIndex((x) => x.id === r.id) === i).map((r) => ({ id: r.id, name: r.name, builtIn: r.built_in, permissions: r.permissions }));
};

export interface InviteInput extends RoleRequest { email: string; firstName?: string; lastName?: string }

/**
 * Adding a person to a tenant is always an invitation their holder accepts (POST /auth/invite and
 * POST /users alike): the same 202 {invite_id, email, expires_at} for an address registered
 * elsewhere and for an unknown one, no account id, no profile; only an active member of this
 * tenant gets the no-body answer and a duplicate-invite notice (spec 000). No password hashing on
 * this path, so the answers take the same time.
 */
export const invite = async (kernel: Kernel, authority: Authority, tenantId: string, input: InviteInput, o: { roleRequired: boolean }) => {
  const email = normalizeEmail(input.email);
  const roles = await resolveRoles(kernel, tenantId, input);
  if (o.roleRequired && roles.length === 0) throw commonErrors.validation([{ field: 'role_id', message: 'role_id or roles is required', code: 'REQUIRED' }]);
  assertMayGive(authority, roles);
  const { rows } = await kernel.db.query<{ user_id: string }>(
    `SELECT m.user_id FROM rm.iam_members m JOIN rm.iam_accounts a ON a.tenant_id = $2 AND a.id = m.user_id
      WHERE m.tenant_id = $1 AND lower(a.email) = $3 AND m.status <> 'pending_deletion'`,
    [tenantId, PLATFORM_TENANT_ID, email]);
  if (rows[0]) {
    sendLater(kernel, { to: email, subject: 'You are already a member', headers: { 'X-Platform-Purpose': 'duplicate-invite' },
      text: 'Someone invited you to a workspace you already belong to. Sign in as usual; nothing else is needed.' });
    return null;
  }
  const inviteId = kernel.ids.next();
  const payload = { inviteId, roleIds: roles.map((r) => r.id), inviterId: authority.userId, firstName: input.firstName ?? '', lastName: input.lastName ?? '' };
  const { token, expiresAt } = await createOneTimeToken(kernel, kernel.db, { purpose: 'invite', ttlMs: LIFETIMES.inviteMs, tenantId, email, payload });
  sendLater(kernel, { to: email, subject: 'You are invited', headers: { 'X-Platform-Token': token, 'X-Platform-Purpose': 'invite' },
    text: `You are invited to join a workspace: ${link(kernel, 'accept-invite', token)}\nThe invitation is valid for 72 hours.` });
  return { invite_id: inviteId, email, expires_at: expiresAt.toISOString() };
};

/**
 * Accepting an invitation creates the account (email verified: the token proves the address) or,
 * for a person registered elsewhere, checks their password; then the membership with the invited
 * roles — a member deleted earlier comes back with exactly the invited roles.
 */
export const acceptInvite = async (kernel: Kernel, traceId: string, input: { token: string; name: string; password: string }): Promise<IssuedTokens> => {
  const row = await peekOneTimeToken(kernel, kernel.db, 'invite', input.token, 'invitation token');
  const email = row.email!;
  const tenantId = row.tenant_id!;
  const existing = await credentialsByEmail(kernel.db, email);
  let passwordHash: string | null = null;
  if (existing) {
    const hash = existing.password_hash;
    if (!hash || !(await passwordWork(kernel, existing.user_id, () => verifyPassword(hash, input.password))).ok) throw identityErrors.invalidCredentials();
  } else {
    assertPasswordPolicy(input.password);
    passwordHash = await passwordWork(kernel, email, () => hashPassword(input.password));
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
    const live: { id: string; name: string }[] = [];
    for (const id of (claimed.payload.roleIds as string[] | undefined) ?? []) {
      const role = await findRole(uow.tx, tenantId, id);
      if (role) live.push({ id, name: role.name });
    }
    const member = await uow.load(Membership, memberStream(tenantId, userId));
    if (member.state.status === 'none') {
      uow.decide(Membership, member, { type: 'AddMember', userId, tenantId, roleIds: live.map((r) => r.id), via: 'invite' });
    } else if (member.state.status === 'pending_deletion') {
      uow.decide(Membership, member, { type: 'RestoreMember' });
      uow.decide(Membership, member, { type: 'SetMemberStatus', status: 'active' });
      for (const held of member.state.roleIds) if (!live.some((r) => r.id === held)) uow.decide(Membership, member, { type: 'RevokeRole', roleId: held, roleName: '' });
      for (const role of live) uow.decide(Membership, member, { type: 'AssignRole', roleId: role.id, roleName: role.name });
    } else {
      throw identityErrors.memberExists();
    }
    uow.afterCommit(() => bumpAccessEpoch(kernel, { userId }));
  });
  const tokens = await issueTokens(kernel, kernel.db, { userId, tenantId });
  await recordLogin(kernel, traceId, userId, tenantId, 'invite');
  return tokens;
};
