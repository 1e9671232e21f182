import { z } from 'zod';
import { providerCatalog } from '../../domain/identity/providers';
import { IdParam, ProviderInfo, ProviderLinkView } from '../../domain/identity/views';
import { commonErrors } from '../../domain/shared/errors';
import { callerOf } from '../../infra/http/auth';
import { findUser, providerLinks } from '../../projections/identity/queries';
import type { IdentityReads } from './http';
import { typed } from './http';

/** Login providers (spec 000, Providers): those the platform offers, and a user's links. */
export const providerReads: IdentityReads = (app, kernel) => {
  const r = typed(app);

  r.get(
    '/auth/providers',
    { config: { access: 'public' }, schema: { response: { 200: z.object({ data: z.array(ProviderInfo) }) } } },
    async () => ({ data: providerCatalog(kernel.config.OIDC_PROVIDERS ?? []) }),
  );

  // the user themself, or a holder of users.list; another tenant's user is 404
  r.get(
    '/users/:id/providers',
    {
      config: { access: 'bearer' },
      schema: { params: IdParam, response: { 200: z.object({ data: z.array(ProviderLinkView) }) } },
    },
    async (request) => {
      const p = callerOf(request);
      if (
        p.userId !== request.params.id &&
        !(p.permissions.has('users.list') || p.permissions.has('users.*') || p.permissions.has('platform.*'))
      )
        throw commonErrors.forbidden();
      if (!(await findUser(kernel.db, p.tenantId, request.params.id)))
        throw commonErrors.notFound('The user does not exist.');
      return { data: await providerLinks(kernel.db, request.params.id) };
    },
  );
};
