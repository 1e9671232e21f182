import { z } from 'zod';
import { CamelPair, TenantId } from '../../domain/identity/views';
import { callerOf } from '../../infra/http/auth';
import { camelPair } from '../../commands/identity/tokens';
import { impersonate } from '../../commands/identity/tenant';
import type { IdentityRoutes } from './http';
import { ownSession, perm, typed } from './http';

/** Tenants (spec 000, Impersonation): the platform owner's session as a user of a tenant. */
const ImpersonateBody = z.object({
  tenantId: TenantId,
  reason: z.string().trim().min(1).max(500),
  note: z.string().max(2000).optional(),
  userId: z.string().max(64).optional(),
});

export const tenantRoutes: IdentityRoutes = (app, kernel) => {
  const r = typed(app);
  // 404: the tenant or the user does not exist
  r.post(
    '/auth/impersonate',
    {
      config: { ...perm('users.impersonate'), ...ownSession, problems: [404] },
      schema: { body: ImpersonateBody, response: { 200: CamelPair } },
    },
    async (request) => camelPair(await impersonate(kernel, callerOf(request), request.id, request.body)),
  );
};
