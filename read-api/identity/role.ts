import { z } from 'zod';
import { IdParam, Permissions, RoleView, toRole } from '../../domain/identity/views';
import { commonErrors } from '../../domain/shared/errors';
import { callerOf } from '../../infra/http/auth';
import { decodeCursor, pageEnvelope, pageQuery, toPage } from '../../infra/http/pagination';
import { findRole, findUser, listRoles, memberAccess } from '../../projections/identity/queries';
import type { IdentityReads } from './http';
import { perm, registeredPermissions, typed } from './http';

/** Roles of the caller's tenant and what they grant (spec 000, Roles and permissions). */
const PermissionList = z.object({
  data: z.array(z.object({ key: z.string(), description: z.string(), module: z.string() })),
});
const MemberPermissions = z.object({ userId: z.string(), roles: z.array(z.string()), permissions: Permissions });

export const roleReads: IdentityReads = (app, kernel) => {
  const r = typed(app);

  r.get(
    '/rbac/roles',
    {
      config: perm('roles.list'),
      schema: { querystring: z.object(pageQuery), response: { 200: pageEnvelope(RoleView) } },
    },
    async (request) => {
      const after = decodeCursor(request.query.page_token, ['id']);
      const rows = await listRoles(kernel.db, callerOf(request).tenantId, {
        after: String(after?.id ?? ''),
        limit: request.query.page_size + 1,
      });
      const registered = await registeredPermissions(kernel);
      return toPage(
        rows,
        request.query.page_size,
        (row) => toRole(row, registered),
        (row) => ({ id: row.id }),
      );
    },
  );

  r.get(
    '/rbac/roles/:id',
    { config: perm('roles.list'), schema: { params: IdParam, response: { 200: RoleView } } },
    async (request) => {
      const row = await findRole(kernel.db, callerOf(request).tenantId, request.params.id);
      if (!row) throw commonErrors.notFound('The role does not exist.');
      return toRole(row, await registeredPermissions(kernel));
    },
  );

  r.get(
    '/rbac/permissions',
    { config: perm('roles.list'), schema: { response: { 200: PermissionList } } },
    async () => ({ data: (await kernel.permissions.current()).list() }),
  );

  r.get(
    '/rbac/users/:id/permissions',
    { config: perm('users.list'), schema: { params: IdParam, response: { 200: MemberPermissions } } },
    async (request) => {
      const tenantId = callerOf(request).tenantId;
      const row = await findUser(kernel.db, tenantId, request.params.id);
      if (!row) throw commonErrors.notFound('The user does not exist.');
      const access = await memberAccess(kernel.db, tenantId, row.id, await registeredPermissions(kernel));
      return { userId: row.id, roles: row.roles, permissions: [...(access?.permissions ?? [])].sort() };
    },
  );
};
