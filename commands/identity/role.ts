import type { Authority } from '../../domain/identity/authority';
import { assertMayAssign, assertMayGrant, PLATFORM_ONLY_PERMISSIONS } from '../../domain/identity/authority';
import { LIMITS } from '../../domain/identity/constants';
import { identityErrors } from '../../domain/identity/errors';
import type { RoleView, UserView } from '../../domain/identity/views';
import { toRole } from '../../domain/identity/views';
import { commonErrors } from '../../domain/shared/errors';
import { isModuleWildcard, isWildcard, moduleOf } from '../../domain/shared/permissions';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import { bumpAccessEpoch } from '../../projections/identity/shared/runtime';
import type { Kernel } from '../../infra/kernel';
import { Membership, memberStream, Role, roleStream, Tenant, tenantStream } from './aggregates';
import { countRoles, registeredPermissions, roleNameTaken } from './lookups';
import { findRole } from '../../projections/identity/queries';
import { assertOwnerRemains, changedMember } from './membership';

/** Roles of the caller's tenant: their definitions, and giving them to members or taking them back. */

const roleOf = async (uow: UnitOfWork, roleId: string) => {
  const role = await uow.load(Role, roleStream(uow.meta.tenantId, roleId));
  if (role.state.status !== 'active') throw commonErrors.notFound('The role does not exist.');
  return { loaded: role, state: role.state };
};

/**
 * A permission a tenant role may hold: a registered key, or {module}.* of a module that registers
 * keys — never system.*, platform.* or the platform owner's own permissions, never a deeper
 * wildcard (money.wallets.* would grant nothing at the check; one rule for writing and checking).
 */
export const validatePermissions = async (kernel: Kernel, permissions: string[]): Promise<void> => {
  if (new Set(permissions).size > LIMITS.permissionsPerRole)
    throw identityErrors.rbacLimit('permissions per role', LIMITS.permissionsPerRole);
  await kernel.permissions.current(); // a module's migration in another process may have changed them
  const modules = new Set(kernel.permissions.list().map((p) => moduleOf(p.key)));
  const refused = permissions.filter((p) => {
    if (/^(system|platform)\./.test(p) || PLATFORM_ONLY_PERMISSIONS.has(p)) return true;
    if (isWildcard(p)) return !isModuleWildcard(p) || !modules.has(moduleOf(p));
    return !kernel.permissions.has(p);
  });
  if (refused.length) throw identityErrors.unknownPermissions(refused);
};

/** after a change of a role: the role as shown (null once deleted), and every member's access epoch bumped once it commits */
const changedRole = async (kernel: Kernel, uow: UnitOfWork, roleId: string): Promise<RoleView | null> => {
  await uow.flush(kernel.projections);
  uow.afterCommit(() => bumpAccessEpoch(kernel, { tenantId: uow.meta.tenantId }));
  const row = await findRole(uow.tx, uow.meta.tenantId, roleId);
  return row ? toRole(row, registeredPermissions(kernel)) : null;
};

const shown = (view: RoleView | null): RoleView => {
  if (!view) throw commonErrors.notFound('The role does not exist.');
  return view;
};

export interface RoleDefinition {
  name: string;
  description?: string;
  permissions: string[];
}

export const createRole = async (
  kernel: Kernel,
  uow: UnitOfWork,
  authority: Authority,
  input: RoleDefinition,
): Promise<RoleView> => {
  await validatePermissions(kernel, input.permissions);
  assertMayGrant(authority, input.permissions);
  // the tenant stream is the lock that keeps the per-tenant count and name uniqueness true under concurrency
  await uow.load(Tenant, tenantStream(uow.meta.tenantId), { lock: true });
  if ((await countRoles(uow.tx, uow.meta.tenantId)) >= LIMITS.rolesPerTenant)
    throw identityErrors.rbacLimit('roles per tenant', LIMITS.rolesPerTenant);
  if (await roleNameTaken(uow.tx, uow.meta.tenantId, input.name)) throw identityErrors.roleNameTaken();
  const roleId = kernel.ids.next();
  uow.decide(Role, await uow.load(Role, roleStream(uow.meta.tenantId, roleId)), {
    type: 'CreateRole',
    roleId,
    tenantId: uow.meta.tenantId,
    name: input.name,
    description: input.description ?? '',
    permissions: input.permissions,
    builtIn: false,
    createdBy: uow.meta.actorId ?? '',
  });
  return shown(await changedRole(kernel, uow, roleId));
};

/** changing or deleting a role needs authority over what it grants now and what it will grant */
export const updateRole = async (
  kernel: Kernel,
  uow: UnitOfWork,
  authority: Authority,
  roleId: string,
  input: Partial<RoleDefinition>,
): Promise<RoleView> => {
  if (input.permissions) await validatePermissions(kernel, input.permissions);
  const { loaded: role, state } = await roleOf(uow, roleId);
  if (state.builtIn) throw identityErrors.builtInRole();
  assertMayGrant(authority, [...state.permissions, ...(input.permissions ?? [])]);
  if (input.name !== undefined) {
    await uow.load(Tenant, tenantStream(uow.meta.tenantId), { lock: true });
    if (await roleNameTaken(uow.tx, uow.meta.tenantId, input.name, roleId)) throw identityErrors.roleNameTaken();
  }
  uow.decide(Role, role, { type: 'UpdateRole', ...input });
  return shown(await changedRole(kernel, uow, roleId));
};

export const deleteRole = async (
  kernel: Kernel,
  uow: UnitOfWork,
  authority: Authority,
  roleId: string,
): Promise<void> => {
  const { loaded: role, state } = await roleOf(uow, roleId);
  if (!state.builtIn) assertMayGrant(authority, state.permissions);
  uow.decide(Role, role, { type: 'DeleteRole' });
  await changedRole(kernel, uow, roleId);
};

/** POST /rbac/roles/:id/assign and /revoke: the member as shown after the change */
export const changeRole = async (
  kernel: Kernel,
  uow: UnitOfWork,
  authority: Authority,
  roleId: string,
  userId: string,
  change: 'assign' | 'revoke',
): Promise<UserView> => {
  const { state: role } = await roleOf(uow, roleId);
  const member = await uow.load(Membership, memberStream(uow.meta.tenantId, userId));
  if (member.state.status === 'none') throw commonErrors.notFound('The user does not exist.');
  assertMayAssign(authority, role, userId, change);
  if (change === 'revoke' && role.builtIn && member.state.roleIds.includes(roleId)) {
    await assertOwnerRemains(uow, userId, 'revoking its Owner role');
  }
  uow.decide(
    Membership,
    member,
    change === 'assign'
      ? { type: 'AssignRole', roleId, roleName: role.name }
      : { type: 'RevokeRole', roleId, roleName: role.name },
  );
  return changedMember(kernel, uow, userId);
};
