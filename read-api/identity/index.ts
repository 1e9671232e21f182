import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { commonErrors } from '../../domain/shared/errors';
import { decodeCursor, pageEnvelope, pageQuery, toPage } from '../../infra/http/pagination';
import type { Kernel } from '../../infra/kernel';
import { defineRoutes } from '../../infra/modules';
import { findRole, findUser, listRoles, listUsers, providerLinks, tenantsOfUser, toRole, toUser } from '../../projections/identity/queries';
import { remainingRecoveryCodes } from '../../commands/identity/mfa';
import { identity, loadAccess, startIdentity } from '../../commands/identity/runtime';
import { IdParam, ProviderLink, Role, TenantChoice, User } from '../../write-api/identity/schemas';
import { providerList } from '../../commands/identity/providers';

const Permissions = z.array(z.string());

export default defineRoutes({
  namespace: 'iam',
  start: async (kernel: Kernel) => { await startIdentity(kernel); },
  register(app, kernel) {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const perm = (permission: string) => ({ access: 'permission', permission } as const);
    const registered = () => kernel.permissions.list().map((p) => p.key);

    r.get('/.well-known/jwks.json', { config: { access: 'public' } }, async (_request, reply) =>
      reply.header('Cache-Control', 'public, max-age=300').send(identity(kernel).ring.jwks()));
    r.get('/auth/providers', { config: { access: 'public' }, schema: { response: { 200: z.object({ data: z.array(z.object({ id: z.string(), type: z.string(), name: z.string() })) }) } } },
      async () => ({ data: providerList(kernel) }));

    r.get('/auth/me', { config: { access: 'bearer' }, schema: { response: { 200: User.extend({ permissions: Permissions, impersonatorId: z.string().optional() }) } } }, async (request) => {
      const p = request.principal!;
      const row = await findUser(kernel.db, p.tenantId, p.userId);
      if (!row) throw commonErrors.notFound('The user does not exist.');
      return { ...toUser(row), permissions: [...p.permissions].sort(), ...(p.impersonatorId ? { impersonatorId: p.impersonatorId } : {}) };
    });
    r.get('/auth/tenants', { config: { access: 'bearer' }, schema: { response: { 200: z.object({ data: z.array(TenantChoice.extend({ current: z.boolean() })) }) } } }, async (request) => {
      const tenants = await tenantsOfUser(kernel.db, request.principal!.userId);
      return { data: tenants.map((t) => ({ ...t, current: t.id === request.principal!.tenantId })) };
    });
    r.get('/auth/recovery-codes', { config: { access: 'bearer' }, schema: { response: { 200: z.object({ remaining: z.number().int() }) } } },
      async (request) => ({ remaining: await remainingRecoveryCodes(kernel.db, request.principal!.userId) }));

    // include_deleted=true lists soft-deleted users too (spec 000 leaves the parameter open; docs/decisions.md)
    r.get('/users', {
      config: perm('users.list'),
      schema: { querystring: z.object({ ...pageQuery, include_deleted: z.enum(['true', 'false']).default('false').describe('true: include soft-deleted users (status pending_deletion)') }), response: { 200: pageEnvelope(User) } },
    }, async (request) => {
      const after = decodeCursor(request.query.page_token, ['id']);
      const rows = await listUsers(kernel.db, request.principal!.tenantId, { after: String(after?.id ?? ''), limit: request.query.page_size + 1, includeDeleted: request.query.include_deleted === 'true' });
      return toPage(rows, request.query.page_size, toUser, (row) => ({ id: row.id }));
    });
    r.get('/users/:id', { config: perm('users.list'), schema: { params: IdParam, response: { 200: User.extend({ permissions: Permissions }) } } }, async (request) => {
      const tenantId = request.principal!.tenantId;
      const row = await findUser(kernel.db, tenantId, request.params.id);
      if (!row) throw commonErrors.notFound('The user does not exist.');
      const access = await loadAccess(kernel, kernel.db, row.id, tenantId);
      return { ...toUser(row), permissions: [...(access?.permissions ?? [])].sort() };
    });
    r.get('/users/:id/providers', { config: { access: 'bearer' }, schema: { params: IdParam, response: { 200: z.object({ data: z.array(ProviderLink) }) } } }, async (request) => {
      const p = request.principal!;
      if (p.userId !== request.params.id && !(p.permissions.has('users.list') || p.permissions.has('users.*') || p.permissions.has('platform.*'))) throw commonErrors.forbidden();
      if (!(await findUser(kernel.db, p.tenantId, request.params.id))) throw commonErrors.notFound('The user does not exist.');
      return { data: await providerLinks(kernel.db, request.params.id) };
    });

    r.get('/rbac/roles', { config: perm('roles.list'), schema: { querystring: z.object(pageQuery), response: { 200: pageEnvelope(Role) } } }, async (request) => {
      const after = decodeCursor(request.query.page_token, ['id']);
      const rows = await listRoles(kernel.db, request.principal!.tenantId, { after: String(after?.id ?? ''), limit: request.query.page_size + 1 });
      return toPage(rows, request.query.page_size, (row) => toRole(row, registered()), (row) => ({ id: row.id }));
    });
    r.get('/rbac/roles/:id', { config: perm('roles.list'), schema: { params: IdParam, response: { 200: Role } } }, async (request) => {
      const row = await findRole(kernel.db, request.principal!.tenantId, request.params.id);
      if (!row) throw commonErrors.notFound('The role does not exist.');
      return toRole(row, registered());
    });
    r.get('/rbac/permissions', { config: perm('roles.list'), schema: { response: { 200: z.object({ data: z.array(z.object({ key: z.string(), description: z.string(), module: z.string() })) }) } } },
      async () => ({ data: kernel.permissions.list() }));
    r.get('/rbac/users/:id/permissions', {
      config: perm('users.list'), schema: { params: IdParam, response: { 200: z.object({ userId: z.string(), roles: z.array(z.string()), permissions: Permissions }) } },
    }, async (request) => {
      const tenantId = request.principal!.tenantId;
      const row = await findUser(kernel.db, tenantId, request.params.id);
      if (!row) throw commonErrors.notFound('The user does not exist.');
      const access = await loadAccess(kernel, kernel.db, row.id, tenantId);
      return { userId: row.id, roles: row.roles, permissions: [...(access?.permissions ?? [])].sort() };
    });
  },
});
