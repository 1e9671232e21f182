import { LIMITS, PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import { identityErrors } from '../../domain/identity/errors';
import { commonErrors } from '../../domain/shared/errors';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import type { Kernel } from '../../infra/kernel';
import { PgCode, pgErrorCode } from '../../infra/postgres/db';
import { countRoles, findRole, findTenant, findUser } from '../../projections/identity/queries';
import { normalizeEmail } from './accounts';
import { Account, accountStream, flushPlatform, Membership, memberStream, platformUnit, Role, roleStream, Tenant, tenantStream } from './aggregates';
import { bumpAccessEpoch } from './runtime';
import type { IssuedTokens } from './tokens';
import { issueTokens } from './tokens';

/** Users, roles and impersonation inside the caller's tenant; ids of other tenants are 404. */

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

export const updateUser = async (kernel: Kernel, uow: UnitOfWork, userId: string, input: { firstName?: string; lastName?: string; email?: string; avatarUrl?: string; status?: 'active' | 'locked' }) => {
  const member = await memberOf(uow, userId);
  if (input.status) uow.decide(Membership, member, { type: 'SetMemberStatus', status: input.status });
  const profile = { firstName: input.firstName, lastName: input.lastName, avatarUrl: input.avatarUrl, email: input.email === undefined ? undefined : normalizeEmail(input.email) };
  if (Object.values(profile).some((v) => v !== undefined)) {
    const p = platformUnit(kernel, uow);
    const account = await p.load(Account, accountStream(userId));
    const { events } = p.decide(Account, account, { type: 'UpdateProfile', ...profile });
    if (profile.email && events.length && account.state.status !== 'none' && account.state.email !== profile.email) {
      try {
        await uow.tx.query('UPDATE identity.credentials SET email = $2, updated_at = now() WHERE user_id = $1', [userId, profile.email]);
      } catch (error) {
        if (pgErrorCode(error) === PgCode.uniqueViolation) throw identityErrors.emailTaken();
        throw error;
      }
    }
    await flushPlatform(kernel, uow, p);
  }
  return view(kernel, uow, userId);
};

export const deleteUser = async (kernel: Kernel, uow: UnitOfWork, userId: string) => {
  const member = await memberOf(uow, userId);
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
  return role;
};

export const changeRole = async (kernel: Kernel, uow: UnitOfWork, roleId: string, userId: string, change: 'assign' | 'revoke') => {
  const role = await roleOf(uow, roleId);
  const name = role.state.status === 'active' ? role.state.name : '';
  uow.decide(Membership, await memberOf(uow, userId), change === 'assign' ? { type: 'AssignRole', roleId, roleName: name } : { type: 'RevokeRole', roleId, roleName: name });
  return view(kernel, uow, userId);
};

/** a permission a role may hold: a registered key, or {module}.* over registered keys; never system.* or platform.* */
export const validatePermissions = (kernel: Kernel, permissions: string[]): void => {
  if (new Set(permissions).size > LIMITS.permissionsPerRole) throw identityErrors.rbacLimit('permissions per role', LIMITS.permissionsPerRole);
  const keys = kernel.permissions.list().map((p) => p.key);
  const unknown = permissions.filter((p) => {
    if (/^(system|platform)\./.test(p)) return true;
    if (p.endsWith('.*')) return !keys.some((k) => k.startsWith(p.slice(0, -1)));
    return !kernel.permissions.has(p);
  });
  if (unknown.length) throw identityErrors.unknownPermissions(unknown);
};

const roleView = async (kernel: Kernel, uow: UnitOfWork, roleId: string) => {
  await uow.flush(kernel.projections);
  uow.afterCommit(() => bumpAccessEpoch(kernel, { tenantId: uow.meta.tenantId }));
  return findRole(uow.tx, uow.meta.tenantId, roleId);
};

const nameTaken = async (uow: UnitOfWork, name: string, except?: string) =>
  (await uow.tx.query('SELECT 1 FROM rm.iam_roles WHERE tenant_id = $1 AND lower(name) = lower($2) AND id <> $3', [uow.meta.tenantId, name, except ?? ''])).rowCount !== 0;

export const createRole = async (kernel: Kernel, uow: UnitOfWork, input: { name: string; description?: string; permissions: string[] }) => {
  validatePermissions(kernel, input.permissions);
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

export const updateRole = async (kernel: Kernel, uow: UnitOfWork, roleId: string, input: { name?: string; description?: string; permissions?: string[] }) => {
  if (input.permissions) validatePermissions(kernel, input.permissions);
  const role = await roleOf(uow, roleId);
  if (input.name !== undefined) {
    await uow.load(Tenant, tenantStream(uow.meta.tenantId), { lock: true });
    if (await nameTaken(uow, input.name, roleId)) throw identityErrors.roleNameTaken();
  }
  uow.decide(Role, role, { type: 'UpdateRole', ...input });
  return roleView(kernel, uow, roleId);
};

export const deleteRole = async (kernel: Kernel, uow: UnitOfWork, roleId: string): Promise<void> => {
  uow.decide(Role, await roleOf(uow, roleId), { type: 'DeleteRole' });
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
