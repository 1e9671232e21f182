import { z } from 'zod';
import { IdParam, Permissions, toUser, UserView } from '../../domain/identity/views';
import { commonErrors } from '../../domain/shared/errors';
import { callerOf } from '../../infra/http/auth';
import { decodeCursor, pageEnvelope, pageQuery, toPage } from '../../infra/http/pagination';
import { findUser, listUsers, memberAccess } from '../../projections/identity/queries';
import type { IdentityReads } from './http';
import { perm, registeredPermissions, typed } from './http';

/** Members of the caller's tenant (spec 000, Users). */
const UserListQuery = z.object({
  ...pageQuery,
  // spec 000 leaves the parameter open (docs/decisions.md)
  include_deleted: z
    .enum(['true', 'false'])
    .default('false')
    .describe('true: include soft-deleted users (status pending_deletion)'),
});

export const membershipReads: IdentityReads = (app, kernel) => {
  const r = typed(app);

  r.get(
    '/users',
    { config: perm('users.list'), schema: { querystring: UserListQuery, response: { 200: pageEnvelope(UserView) } } },
    async (request) => {
      const after = decodeCursor(request.query.page_token, ['id']);
      const rows = await listUsers(kernel.db, callerOf(request).tenantId, {
        after: String(after?.id ?? ''),
        limit: request.query.page_size + 1,
        includeDeleted: request.query.include_deleted === 'true',
      });
      return toPage(rows, request.query.page_size, toUser, (row) => ({ id: row.id }));
    },
  );

  r.get(
    '/users/:id',
    {
      config: perm('users.list'),
      schema: { params: IdParam, response: { 200: UserView.extend({ permissions: Permissions }) } },
    },
    async (request) => {
      const tenantId = callerOf(request).tenantId;
      const row = await findUser(kernel.db, tenantId, request.params.id);
      if (!row) throw commonErrors.notFound('The user does not exist.');
      const access = await memberAccess(kernel.db, tenantId, row.id, await registeredPermissions(kernel));
      return { ...toUser(row), permissions: [...(access?.permissions ?? [])].sort() };
    },
  );
};
