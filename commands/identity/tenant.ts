import { ownerGrants } from '../../domain/identity/access';
import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import { identityErrors } from '../../domain/identity/errors';
import { commonErrors } from '../../domain/shared/errors';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import type { Kernel } from '../../infra/kernel';
import { Membership, memberStream, Role, roleStream, Tenant, tenantStream } from './aggregates';
import { findTenant, registeredPermissions } from './lookups';
import { findUser } from '../../projections/identity/queries';
import type { IssuedTokens } from './tokens';
import { issueTokens } from './tokens';

/** Tenants: their creation with the built-in role and the first member, and the platform owner's impersonation. */

/** what the built-in Owner role grants: every registered permission (also of modules installed later) but the platform owner's */
export const ownerPermissions = (kernel: Kernel): string[] => ownerGrants(registeredPermissions(kernel));

export const slugify = (name: string): string =>
  name
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')
    .slice(0, 40) || 'tenant';

/** creates a tenant, its built-in role and the owner's membership in the unit of work */
export const createTenant = async (
  kernel: Kernel,
  uow: UnitOfWork,
  o: { tenantId: string; name: string; slug: string; ownerId: string; roleName: string; permissions: string[] },
) => {
  const roleId = kernel.ids.next();
  uow.decide(Tenant, await uow.load(Tenant, tenantStream(o.tenantId)), {
    type: 'CreateTenant',
    tenantId: o.tenantId,
    name: o.name,
    slug: o.slug,
    ownerId: o.ownerId,
    ownerRoleId: roleId,
  });
  uow.decide(Role, await uow.load(Role, roleStream(o.tenantId, roleId)), {
    type: 'CreateRole',
    roleId,
    tenantId: o.tenantId,
    name: o.roleName,
    description: `Built-in role: ${o.roleName}`,
    permissions: o.permissions,
    builtIn: true,
    createdBy: o.ownerId,
  });
  uow.decide(Membership, await uow.load(Membership, memberStream(o.tenantId, o.ownerId)), {
    type: 'AddMember',
    userId: o.ownerId,
    tenantId: o.tenantId,
    roleIds: [roleId],
    via: 'register',
  });
  return roleId;
};

export interface ImpersonationRequest {
  tenantId: string;
  reason: string;
  note?: string;
  userId?: string;
}

/**
 * Impersonation by the platform owner: a 1-hour session in the tenant as the given user (the
 * tenant's owner by default), the impersonator in the act claim, and auth.impersonation.started
 * on the tenant's stream as the audit record.
 */
export const impersonate = async (
  kernel: Kernel,
  principal: { userId: string; permissions: ReadonlySet<string>; impersonatorId?: string },
  traceId: string,
  input: ImpersonationRequest,
): Promise<IssuedTokens> => {
  if (!principal.permissions.has('platform.*') || principal.impersonatorId) throw identityErrors.notPlatformOwner();
  const tenant = await findTenant(kernel.db, input.tenantId);
  if (!tenant || tenant.tenant_id === PLATFORM_TENANT_ID) throw commonErrors.notFound('The tenant does not exist.');
  const userId = input.userId ?? tenant.owner_id;
  if (!(await findUser(kernel.db, input.tenantId, userId))) throw commonErrors.notFound('The user does not exist.');
  const expiresAt = new Date(kernel.clock.now().getTime() + 3600_000);
  await kernel.commands.run(
    { tenantId: input.tenantId, actorId: principal.userId, traceId, correlationId: traceId, causationId: null },
    async (uow) => {
      uow.decide(Tenant, await uow.load(Tenant, tenantStream(input.tenantId)), {
        type: 'StartImpersonation',
        tenantId: input.tenantId,
        impersonatorId: principal.userId,
        userId,
        reason: input.reason,
        note: input.note ?? '',
        expiresAt: expiresAt.toISOString(),
      });
    },
  );
  return issueTokens(kernel, kernel.db, {
    userId,
    tenantId: input.tenantId,
    impersonatorId: principal.userId,
    familyExpiresAt: expiresAt,
  });
};
