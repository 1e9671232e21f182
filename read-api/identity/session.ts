import { z } from 'zod';
import { Permissions, TenantChoice, toUser, UserView } from '../../domain/identity/views';
import { commonErrors } from '../../domain/shared/errors';
import { callerOf } from '../../infra/http/auth';
import { identityRuntime } from '../../projections/identity/shared/runtime';
import { findUser, tenantsOfUser } from '../../projections/identity/queries';
import type { IdentityReads } from './http';
import { typed } from './http';

/** The session's side of reading (spec 000, Authentication): the signing keys, the current user, the tenants to switch to. */
const Me = UserView.extend({ permissions: Permissions, impersonatorId: z.string().optional() });
const Tenants = z.object({ data: z.array(TenantChoice.extend({ current: z.boolean() })) });

export const sessionReads: IdentityReads = (app, kernel) => {
  const r = typed(app);

  r.get('/.well-known/jwks.json', { config: { access: 'public' } }, async (_request, reply) =>
    reply.header('Cache-Control', 'public, max-age=300').send(identityRuntime(kernel).ring.jwks()),
  );

  r.get('/auth/me', { config: { access: 'bearer' }, schema: { response: { 200: Me } } }, async (request) => {
    const p = callerOf(request);
    const row = await findUser(kernel.db, p.tenantId, p.userId);
    if (!row) throw commonErrors.notFound('The user does not exist.');
    return {
      ...toUser(row),
      permissions: [...p.permissions].sort(),
      ...(p.impersonatorId ? { impersonatorId: p.impersonatorId } : {}),
    };
  });

  r.get('/auth/tenants', { config: { access: 'bearer' }, schema: { response: { 200: Tenants } } }, async (request) => {
    const p = callerOf(request);
    const tenants = await tenantsOfUser(kernel.db, p.userId);
    return { data: tenants.map((t) => ({ ...t, current: t.id === p.tenantId })) };
  });
};
