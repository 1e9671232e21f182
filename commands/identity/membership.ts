import type { Authority } from '../../domain/identity/authority';
import { assertMayGive } from '../../domain/identity/authority';
import { LIFETIMES, LIMITS, PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import { identityErrors } from '../../domain/identity/errors';
import type { InviteAnswer, RoleRecord, SnakePair, UserView } from '../../domain/identity/views';
import { toUser } from '../../domain/identity/views';
import { commonErrors } from '../../domain/shared/errors';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import { bumpAccessEpoch } from '../../projections/identity/shared/runtime';
import type { Kernel } from '../../infra/kernel';
import type { Queryable } from '../../infra/postgres/db';
import { inTransaction } from '../../infra/postgres/db';
import { usageLimits } from '../../infra/usage-limits';
import { hashPassword, verifyPassword } from '../../infra/security/passwords';
import { recordLogin } from './account';
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
import { requestEmailChange } from './email-change';
import { activeOwnerIds, findRolesByName, invitationPending, memberByEmail, memberElsewhere } from './lookups';
import { findRole, findUser } from '../../projections/identity/queries';
import { assertSeatForInvitation, assertSeatForMember } from './seats';
import { link, sendLater } from './mail';
import { assertPasswordPolicy, claimEmail, normalizeEmail, passwordWork } from './passwords';
import { credentials } from './repositories/credentials';
import { refreshTokens } from './repositories/refresh-tokens';
import { consumeOneTimeToken, createOneTimeToken, issueTokens, peekOneTimeToken, snakePair } from './tokens';

/**
 * Memberships: inviting a person, accepting, and a tenant's changes to its members; ids of other
 * tenants are 404. An account is global and a membership belongs to one tenant (DESIGN.md
 * mechanism 9): a tenant administrator acts on memberships; account-wide fields change only by
 * their holder, or by the administrator of the one tenant the account has ever belonged to.
 */

/** the member as the tenant sees it, read in the command's transaction after its events are projected */
export const memberView = async (q: Queryable, tenantId: string, userId: string): Promise<UserView> => {
  const row = await findUser(q, tenantId, userId);
  if (!row) throw commonErrors.notFound('The user does not exist.');
  return toUser(row);
};

/** the user must be a member of the tenant (another tenant's id is 404) */
export const assertMember = async (kernel: Kernel, tenantId: string, userId: string): Promise<void> => {
  if (!(await findUser(kernel.db, tenantId, userId))) throw commonErrors.notFound('The user does not exist.');
};

const memberOf = async (uow: UnitOfWork, userId: string) => {
  const member = await uow.load(Membership, memberStream(uow.meta.tenantId, userId));
  if (member.state.status === 'none') throw commonErrors.notFound('The user does not exist.');
  return member;
};

/** after a change of a member: its view, and its access epoch bumped once the change commits */
export const changedMember = async (kernel: Kernel, uow: UnitOfWork, userId: string): Promise<UserView> => {
  await uow.flush(kernel.projections);
  uow.afterCommit(() => bumpAccessEpoch(kernel, { userId }));
  return memberView(uow.tx, uow.meta.tenantId, userId);
};

/**
 * A tenant never loses its last active Owner. The tenant stream is locked first, so two commands
 * that each remove one of two Owners run one after the other and the second is refused.
 */
export const assertOwnerRemains = async (uow: UnitOfWork, leavingUserId: string, what: string): Promise<void> => {
  await uow.load(Tenant, tenantStream(uow.meta.tenantId), { lock: true });
  const owners = await activeOwnerIds(uow.tx, uow.meta.tenantId);
  if (owners.length === 1 && owners[0] === leavingUserId) {
    throw identityErrors.lastOwner(
      `This is the tenant's last active Owner; ${what} would leave the tenant without one. Make another member Owner first.`,
    );
  }
};

/** account-wide fields: the holder, or an administrator of the only tenant the account ever belonged to */
const assertMayChangeAccount = async (
  kernel: Kernel,
  uow: UnitOfWork,
  authority: Authority,
  userId: string,
): Promise<void> => {
  if (authority.userId === userId) return;
  const p = platformUnit(kernel, uow);
  const account = await p.load(Account, accountStream(userId));
  const home = account.state.status === 'none' ? null : account.state.homeTenantId;
  if (
    home !== uow.meta.tenantId ||
    home === PLATFORM_TENANT_ID ||
    (await memberElsewhere(uow.tx, userId, uow.meta.tenantId))
  ) {
    throw identityErrors.accountHeldElsewhere();
  }
};

export interface UserChanges {
  firstName?: string;
  lastName?: string;
  email?: string;
  avatarUrl?: string;
  status?: 'active' | 'locked';
}

export const updateUser = async (
  kernel: Kernel,
  uow: UnitOfWork,
  authority: Authority,
  userId: string,
  input: UserChanges,
): Promise<UserView> => {
  const member = await memberOf(uow, userId);
  if (input.status) {
    // the membership's status is the tenant's business: users.update, not the holder's own say
    if (
      !authority.permissions.has('users.update') &&
      !authority.permissions.has('users.*') &&
      !authority.permissions.has('platform.*')
    ) {
      throw commonErrors.forbidden('The permission users.update is required to change a status.');
    }
    if (input.status === 'locked') await assertOwnerRemains(uow, userId, 'locking it');
    uow.decide(Membership, member, { type: 'SetMemberStatus', status: input.status });
  }
  const profile = { firstName: input.firstName, lastName: input.lastName, avatarUrl: input.avatarUrl };
  const changesProfile = Object.values(profile).some((v) => v !== undefined);
  if (changesProfile || input.email !== undefined) await assertMayChangeAccount(kernel, uow, authority, userId);
  if (changesProfile) {
    const p = platformUnit(kernel, uow);
    p.decide(Account, await p.load(Account, accountStream(userId)), { type: 'UpdateProfile', ...profile });
    await flushPlatform(kernel, uow, p);
  }
  if (input.email !== undefined)
    await requestEmailChange(kernel, uow.tx, { userId, newEmail: input.email, requestedBy: authority.userId });
  return changedMember(kernel, uow, userId);
};

export const deleteUser = async (kernel: Kernel, uow: UnitOfWork, userId: string): Promise<UserView> => {
  const member = await memberOf(uow, userId);
  if (member.state.status !== 'pending_deletion') await assertOwnerRemains(uow, userId, 'deleting it');
  uow.decide(Membership, member, { type: 'DeleteMember', at: kernel.clock.now().toISOString() });
  // the sessions in this tenant end with the deletion
  await refreshTokens.revokeInTenant(uow.tx, userId, uow.meta.tenantId, kernel.clock.now());
  return changedMember(kernel, uow, userId);
};

export const restoreUser = async (kernel: Kernel, uow: UnitOfWork, userId: string): Promise<UserView> => {
  const member = await memberOf(uow, userId);
  if (member.state.status === 'pending_deletion') await assertSeatForMember(kernel, uow.tx, uow.meta.tenantId);
  uow.decide(Membership, member, { type: 'RestoreMember' });
  return changedMember(kernel, uow, userId);
};

export interface RoleRequest {
  role_id?: string;
  roles?: string[];
  role_ids?: string[];
}

/** role ids from {role_id}, {role_ids} or {roles: [names]}; unknown ones are 404 (another tenant's ids too) */
export const resolveRoles = async (kernel: Kernel, tenantId: string, input: RoleRequest) => {
  const ids = [...new Set([...(input.role_id ? [input.role_id] : []), ...(input.role_ids ?? [])])];
  const names = [...new Set(input.roles ?? [])];
  if (ids.length + names.length > LIMITS.rolesPerUser)
    throw identityErrors.rbacLimit('roles per user', LIMITS.rolesPerUser);
  const found: RoleRecord[] = [];
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
  return found
    .filter((r, i) => found.findIndex((x) => x.id === r.id) === i)
    .map((r) => ({ id: r.id, name: r.name, builtIn: r.built_in, permissions: r.permissions }));
};

export interface InviteInput extends RoleRequest {
  email: string;
  firstName?: string;
  lastName?: string;
}

/**
 * Adding a person to a tenant is always an invitation their holder accepts (POST /auth/invite and
 * POST /users alike): the same 202 {invite_id, email, expires_at} for an address registered
 * elsewhere and for an unknown one, no account id, no profile; only an active member of this
 * tenant gets the no-body answer (null) and a duplicate-invite notice (spec 000). No password
 * hashing on this path, so the answers take the same time.
 */
export const invite = async (
  kernel: Kernel,
  authority: Authority,
  tenantId: string,
  input: InviteInput,
  o: { roleRequired: boolean },
): Promise<InviteAnswer | null> => {
  const email = normalizeEmail(input.email);
  const roles = await resolveRoles(kernel, tenantId, input);
  if (o.roleRequired && roles.length === 0)
    throw commonErrors.validation([{ field: 'role_id', message: 'role_id or roles is required', code: 'REQUIRED' }]);
  assertMayGive(authority, roles);
  if (await memberByEmail(kernel.db, tenantId, email)) {
    sendLater(kernel, {
      to: email,
      subject: 'You are already a member',
      headers: { 'X-Platform-Purpose': 'duplicate-invite' },
      text: 'Someone invited you to a workspace you already belong to. Sign in as usual; nothing else is needed.',
    });
    return null;
  }
  const inviteId = kernel.ids.next();
  const payload = {
    inviteId,
    roleIds: roles.map((r) => r.id),
    inviterId: authority.userId,
    firstName: input.firstName ?? '',
    lastName: input.lastName ?? '',
  };
  // a re-sent invitation to an address already pending takes no new seat
  const { token, expiresAt } = await inTransaction(kernel.db, async (tx) => {
    if (!(await invitationPending(tx, tenantId, email, kernel.clock.now())))
      await assertSeatForInvitation(kernel, tx, tenantId);
    return createOneTimeToken(kernel, tx, { purpose: 'invite', ttlMs: LIFETIMES.inviteMs, tenantId, email, payload });
  });
  await usageLimits(kernel).changed(tenantId);
  sendLater(kernel, {
    to: email,
    subject: 'You are invited',
    headers: { 'X-Platform-Token': token, 'X-Platform-Purpose': 'invite' },
    text: `You are invited to join a workspace: ${link(kernel, 'accept-invite', token)}\nThe invitation is valid for 72 hours.`,
  });
  return { invite_id: inviteId, email, expires_at: expiresAt.toISOString() };
};

const invitedRoleIds = (payload: Record<string, unknown>): string[] =>
  Array.isArray(payload.roleIds) ? payload.roleIds.filter((id): id is string => typeof id === 'string') : [];

/**
 * Accepting an invitation creates the account (email verified: the token proves the address) or,
 * for a person registered elsewhere, checks their password; then the membership with the invited
 * roles — a member deleted earlier comes back with exactly the invited roles.
 */
export const acceptInvite = async (
  kernel: Kernel,
  traceId: string,
  input: { token: string; name: string; password: string },
): Promise<SnakePair> => {
  const what = 'invitation token';
  const row = await peekOneTimeToken(kernel, kernel.db, 'invite', input.token, what);
  if (!row.email || !row.tenantId) throw identityErrors.tokenInvalid(what);
  const { email, tenantId } = { email: row.email, tenantId: row.tenantId };
  const existing = await credentials.byEmail(kernel.db, email);
  let passwordHash: string | null = null;
  if (existing) {
    const hash = existing.passwordHash;
    if (!hash || !(await passwordWork(kernel, existing.userId, () => verifyPassword(hash, input.password))).ok)
      throw identityErrors.invalidCredentials();
  } else {
    assertPasswordPolicy(input.password);
    passwordHash = await passwordWork(kernel, email, () => hashPassword(input.password));
  }
  const userId = existing?.userId ?? kernel.ids.next();
  const [firstName = '', ...rest] = input.name.trim().split(/\s+/);
  await kernel.commands.run(anonymousMeta(tenantId, traceId, userId), async (uow) => {
    const claimed = await consumeOneTimeToken(kernel, uow.tx, 'invite', input.token, what);
    const p = platformUnit(kernel, uow);
    const account = await p.load(Account, accountStream(userId));
    if (existing) p.decide(Account, account, { type: 'VerifyEmail', email });
    else {
      await claimEmail(kernel, uow.tx, userId, email, passwordHash);
      p.decide(Account, account, {
        type: 'CreateAccount',
        userId,
        tenantId,
        email,
        firstName,
        lastName: rest.join(' '),
        emailVerified: true,
        hasPassword: true,
        via: 'invite',
      });
    }
    await flushPlatform(kernel, uow, p);
    const live: { id: string; name: string }[] = [];
    for (const id of invitedRoleIds(claimed.payload)) {
      const role = await findRole(uow.tx, tenantId, id);
      if (role) live.push({ id, name: role.name });
    }
    const member = await uow.load(Membership, memberStream(tenantId, userId));
    // a membership coming (back) takes a seat: checked under the tenant's seat lock (commands/identity/seats.ts)
    if (member.state.status === 'none' || member.state.status === 'pending_deletion')
      await assertSeatForMember(kernel, uow.tx, tenantId);
    if (member.state.status === 'none') {
      uow.decide(Membership, member, {
        type: 'AddMember',
        userId,
        tenantId,
        roleIds: live.map((r) => r.id),
        via: 'invite',
      });
    } else if (member.state.status === 'pending_deletion') {
      uow.decide(Membership, member, { type: 'RestoreMember' });
      uow.decide(Membership, member, { type: 'SetMemberStatus', status: 'active' });
      for (const held of member.state.roleIds)
        if (!live.some((r) => r.id === held))
          uow.decide(Membership, member, { type: 'RevokeRole', roleId: held, roleName: '' });
      for (const role of live)
        uow.decide(Membership, member, { type: 'AssignRole', roleId: role.id, roleName: role.name });
    } else {
      throw identityErrors.memberExists();
    }
    uow.afterCommit(() => bumpAccessEpoch(kernel, { userId }));
  });
  const tokens = await issueTokens(kernel, kernel.db, { userId, tenantId });
  await recordLogin(kernel, traceId, userId, tenantId, 'invite');
  return snakePair(kernel.db, tokens);
};
