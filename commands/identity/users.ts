import type { Authority } from '../../domain/identity/authority';
import { assertMayAssign, assertMayGrant, PLATFORM_ONLY_PERMISSIONS } from '../../domain/identity/authority';
import { LIMITS, PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import { identityErrors } from '../../domain/identity/errors';
import { commonErrors } from '../../domain/shared/errors';
import { isModuleWildcard, isWildcard, moduleOf } from '../../domain/shared/permissions';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import type { Kernel } from '../../infra/kernel';
import { activeOwnerIds, countRoles, findRole, findTenant, findUser, memberElsewhere } from '../../projections/identity/queries';
import { Account, accountStream, flushPlatform, Membership, memberStream, platformUnit, Role, roleStream, Tenant, tenantStream } from './aggregates';
import { requestEmailChange } from './email-change';
import { bumpAccessEpoch } from './runtime';
import type { IssuedTokens } from './tokens';
import { issueTokens } from './tokens';

/**
 * Users, roles and impersonation inside the caller's tenant; ids of other tenants are 404.
 * An account is global and a membership belongs to one tenant (DESIGN.md mechanism 9): a tenant
 * administrator acts on memberships; account-wide fields change only by their holder, or by the
 * administrator of the one tenant the account has ever belonged to.
 */

const memberOf = async (uow: UnitOfWork, userId: string) => {
  const member = await uow.load(Membership, memberStream(uow.meta.tenantId, userId));
  if (member.state.status === 'none') throw commonErrors.notFound('The user does not exist.');
  return member;
};

const view = async (kernel: Kernel, uow: UnitOfWork, userId: string) => {
  await uow.flush(kernel.projections);
  uow.afterCommit(() => bumpAccessEpoch(kernel, { userId }));
  return findUser(uow.tx, uow.meta.tenantId, userId);
};

/**
 * A tenant never loses its last active Owner. The tenant stream is locked first, so two commands
 * that each remove one of two Owners run one after the other and the second is refused.
 */
const assertOwnerRemains = async (uow: UnitOfWork, leavingUserId: string, what: string): Promise<void> => {
  await uow.load(Tenant, tenantStream(uow.meta.tenantId), { lock: true });
  const owners = await activeOwnerIds(uow.tx, uow.meta.tenantId);
  if (owners.length === 1 && owners[0] === leavingUserId) {
    throw identityErrors.lastOwner(`This is the tenant's last active Owner; ${what} would leave the tenant without one. Make another member Owner first.`);
  }
};

/** account-wide fields: the holder, or an administrator of the only tenant the account ever belonged to */
const assertMayChangeAccount = async (kernel: Kernel, uow: UnitOfWork, authority: Authority, userId: string): Promise<void> => {
  if (authority.userId === userId) return;
  const p = platformUnit(kernel, uow);
  const account = await p.load(Account, accountStream(userId));
  const home = account.state.status === 'none' ? null : account.state.homeTenantId;
  if (home !== uow.meta.tenantId || home === PLATFORM_TENANT_ID || (await memberElsewhere(uow.tx, userId, uow.meta.tenantId))) {
    throw identityErrors.accountHeldElsewhere();
  }
};

export interface UserChanges { firstName?: string; lastName?: string; email?: string; avatarUrl?: string; status?: 'active' | 'locked' }

export const updateUser = async (kernel: Kernel, uow: UnitOfWork, authority: Authority, userId: string, input: UserChanges) => {
  const member = await memberOf(uow, userId);
  if (input.status) {
    // the membership's status is the tenant's business: users.update, not the holder's own say
    if (!authority.permissions.has('users.update') && !authority.permissions.has('users.*') && !authority.permissions.has('platform.*')) {
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
  if (input.email !== undefined) await requestEmailChange(kernel, uow.tx, { userId, newEmail: input.email, requestedBy: authority.userId });
  return view(kernel, uow, userId);
};

export const deleteUser = async (kernel: Kernel, uow: UnitOfWork, userId: string) => {
  const member = await memberOf(uow, userId);
  if (member.state.status !== 'pending_deletion') await assertOwnerRemains(uow, userId, 'deleting it');
  uow.decide(Membership, member, { type: 'DeleteMember', at: kernel.clock.now().toISOString() });
  // the sessions in this tenant end with the deletion
  await uow.tx.query('UPDATE identity.refresh_tokens SET revoked_at = $3 WHERE user_id = $1 AND tenant_id = $2 AND revoked_at IS NULL', [userId, uow.meta.tenantId, kernel.clock.now()]);
  return view(kernel, uow, userId);
};

export const restoreUser = async (kernel: Kernel, uow: UnitOfWork, userId: string) => {
  uow.decide(Membership, await memberOf(uow, userId), { type: 'RestoreMember' });
  return view(kernel, uow, userId);
};

const roleOf = async (uow: UnitOfWork, roleId: string) => {
  const role = await uow.load(Role, roleStream(uow.meta.tenantId, roleId));
  if (role.state.status !== 'active') throw commonErrors.notFound('The role does not exist.');
  return { loaded: role, state: role.state };
};

export const changeRole = async (kernel: Kernel, uow: UnitOfWork, authority: Authority, roleId: string, userId: string, change: 'assign' | 'revoke') => {
  const { state: role } = await roleOf(uow, roleId);
  const member = await memberOf(uow, userId);
  assertMayAssign(authority, role, userId, change);
  if (change === 'revoke' && role.builtIn && member.state.status !== 'none' && member.state.roleIds.includes(roleId)) {
    await assertOwnerRemains(uow, userId, 'revoking its Owner role');
  }
  uow.decide(Membership, member, change === 'assign' ? { type: 'AssignRole', roleId, roleName: role.name } : { type: 'RevokeRole', roleId, roleName: role.name });
  return view(kernel, uow, userId);
};

/**
 * A permission a tenant role may hold: a registered key, or {module}.* of a module that registers
 * keys — never system.*, platform.* or the platform owner's own permissions, never a deeper
 * wildcard (money.wallets.* would grant nothing at the check; one rule for writing and checking).
 */
export const validatePermissions = (kernel: Kernel, permissions: string[]): void => {
  if (new Set(permissions).size > LIMITS.permissionsPerRole) throw identityErrors.rbacLimit('permissions per role', LIMITS.permissionsPerRole);
  const modules = new Set(kernel.permissions.list().map((p) => moduleOf(p.key)));
  const refused = permissions.filter((p) => {
    if (/^(system|platform)\./.test(p) || PLATFORM_ONLY_PERMISSIONS.has(p)) return true;
    if (isWildcard(p)) return !isModuleWildcard(p) || !modules.has(moduleOf(p));
    return !kernel.permissions.has(p);
  });
  if (refused.length) throw identityErrors.unknownPermissions(refused);
};

const roleView = async (kernel: Kernel, uow: UnitOfWork, roleId: string) => {
  await uow.flush(kernel.projections);
  uow.afterCommit(() => bumpAccessEpoch(kernel, { tenantId: uow.meta.tenantId }));
  return findRole(uow.tx, uow.meta.tenantId, roleId);
};

const nameTaken = async (uow: UnitOfWork, name: string, except?: string) =>
  (await uow.tx.query('SELECT 1 FROM rm.iam_roles WHERE tenant_id = $1 AND lower(name) = lower($2) AND id <> $3', [uow.meta.tenantId, name, except ?? ''])).rowCount !== 0;

export const createRole = async (kernel: Kernel, uow: UnitOfWork, authority: Authority, input: { name: string; description?: string; permissions: string[] }) => {
  validatePermissions(kernel, input.permissions);
  assertMayGrant(authority, input.permissions);
  // the tenant stream is the lock that keeps the per-tenant count and name uniqueness true under concurrency
  await uow.load(Tenant, tenantStream(uow.meta.tenantId), { lock: true });
  if ((await countRoles(uow.tx, uow.meta.tenantId)) >= LIMITS.rolesPerTenant) throw identityErrors.rbacLimit('roles per tenant', LIMITS.rolesPerTenant);
  if (await nameTaken(uow, input.name)) throw identityErrors.roleNameTaken();
  const roleId = kernel.ids.next();
  uow.decide(Role, await uow.load(Role, roleStream(uow.meta.tenantId, roleId)), {
    type: 'CreateRole', roleId, tenantId: uow.meta.tenantId, name: input.name, description: input.description ?? '', permissions: input.permissions, builtIn: false, createdBy: uow.meta.actorId ?? '',
  });
  return roleView(kernel, uow, roleId);
};

/** changing or deleting a role needs authority over what it grants now and what it will grant */
export const updateRole = async (kernel: Kernel, uow: UnitOfWork, authority: Authority, roleId: string, input: { name?: string; description?: string; permissions?: string[] }) => {
  if (input.permissions) validatePermissions(kernel, input.permissions);
  const { loaded: role, state } = await roleOf(uow, roleId);
  if (state.builtIn) throw identityErrors.builtInRole();
  assertMayGrant(authority, [...state.permissions, ...(input.permissions ?? [])]);
  if (input.name !== undefined) {
    await uow.load(Tenant, tenantStream(uow.meta.tenantId), { lock: true });
    if (await nameTaken(uow, input.name, roleId)) throw identityErrors.roleNameTaken();
  }
  uow.decide(Role, role, { type: 'UpdateRole', ...input });
  return roleView(kernel, uow, roleId);
};

export const deleteRole = async (kernel: Kernel, uow: UnitOfWork, authority: Authority, roleId: string): Promise<void> => {
  const { loaded: role, state } = await roleOf(uow, roleId);
  if (!state.builtIn) assertMayGrant(authority, state.permissions);
  uow.decide(Role, role, { type: 'DeleteRole' });
  await roleView(kernel, uow, roleId);
};

/**
 * Impersonation by the platform owner: a 1-hour session in the tenant as the given user (the
 * tenant's owner by default), the impersonator in the act claim, and auth.impersonation.started
 * on the tenant's stream as the audit record.
 */
export const impersonate = async (kernel: Kernel, principal: { userId: string; permissions: ReadonlySet<string>; impersonatorId?: string }, traceId: string,
  input: { tenantId: string; reason: string; note?: string; userId?: string }): Promise<IssuedTokens> => {
  if (!principal.permissions.has('platform.*') || principal.impersonatorId) throw identityErrors.notPlatformOwner();
  const tenant = await findTenant(kernel.db, input.tenantId);
  if (!tenant || tenant.tenant_id === PLATFORM_TENANT_ID) throw commonErrors.notFound('The tenant does not exist.');
  const userId = input.userId ?? tenant.owner_id;
  if (!(await findUser(kernel.db, input.tenantId, userId))) throw commonErrors.notFound('The user does not exist.');
  const expiresAt = new Date(kernel.clock.now().getTime() + 3600_000);
  await kernel.commands.run({ tenantId: input.tenantId, actorId: principal.userId, traceId, correlationId: traceId, causationId: null }, async (uow) => {
    uow.decide(Tenant, await uow.load(Tenant, tenantStream(input.tenantId)), {
      type: 'StartImpersonation', tenantId: input.tenantId, impersonatorId: principal.userId, userId, reason: input.reason, note: input.note ?? '', expiresAt: expiresAt.toISOString(),
    });
  });
  return issueTokens(kernel, kernel.db, { userId, tenantId: input.tenantId, impersonatorId: principal.userId, familyExpiresAt: expiresAt });
};
