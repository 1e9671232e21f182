import { z } from 'zod';
import { authorityOf } from '../../domain/identity/authority';
import { IdParam, RoleView, UserView } from '../../domain/identity/views';
import { callerOf } from '../../infra/http/auth';
import { executeCommand } from '../../infra/http/commands';
import { changeRole, createRole, deleteRole, updateRole } from '../../commands/identity/role';
import type { IdentityRoutes } from './http';
import { perm, tenantData, typed } from './http';

/** Roles of the caller's tenant (spec 000, Roles): definitions, assignment and revocation. */
const RoleBody = z.object({
  name: z.string().trim().min(1).max(100),
  description: z.string().max(1000).optional(),
  permissions: z.array(z.string().max(200)).max(5000),
});
const AssignBody = z.object({ user_id: z.string().min(1).max(64) });

export const roleRoutes: IdentityRoutes = (app, kernel) => {
  const r = typed(app);
  const optional = { idempotency: 'optional' } as const;

  // 409: a role of that name exists
  r.post(
    '/rbac/roles',
    {
      config: { ...perm('roles.create'), ...tenantData, ...optional, problems: [409] },
      schema: { body: RoleBody, response: { 201: RoleView } },
    },
    (request, reply) =>
      executeCommand(kernel, request, reply, { status: 201, ...optional }, (uow) =>
        createRole(kernel, uow, authorityOf(callerOf(request)), request.body),
      ),
  );

  r.put(
    '/rbac/roles/:id',
    {
      config: { ...perm('roles.update'), ...tenantData, ...optional, problems: [409] },
      schema: { params: IdParam, body: RoleBody.partial(), response: { 200: RoleView } },
    },
    (request, reply) =>
      executeCommand(kernel, request, reply, optional, (uow) =>
        updateRole(kernel, uow, authorityOf(callerOf(request)), request.params.id, request.body),
      ),
  );

  r.delete(
    '/rbac/roles/:id',
    {
      config: { ...perm('roles.delete'), ...tenantData },
      schema: { params: IdParam, response: { 204: z.null().describe('the role is deleted') } },
    },
    (request, reply) =>
      executeCommand(kernel, request, reply, { status: 204 }, (uow) =>
        deleteRole(kernel, uow, authorityOf(callerOf(request)), request.params.id),
      ),
  );

  // 409 last-owner: revoking the tenant's last Owner
  for (const change of ['assign', 'revoke'] as const) {
    r.post(
      `/rbac/roles/:id/${change}`,
      {
        config: { ...perm('roles.assign'), ...tenantData, ...optional, problems: [409] },
        schema: { params: IdParam, body: AssignBody, response: { 200: UserView } },
      },
      (request, reply) =>
        executeCommand(kernel, request, reply, optional, (uow) =>
          changeRole(kernel, uow, authorityOf(callerOf(request)), request.params.id, request.body.user_id, change),
        ),
    );
  }
};
