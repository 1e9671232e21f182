import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { commonErrors } from '../../domain/shared/errors';
import type { Principal } from '../../infra/http/auth';
import { bearerToken, hasPermission } from '../../infra/http/auth';
import type { Kernel } from '../../infra/kernel';
import { findUser } from '../../projections/identity/queries';
import type { SessionOutcome } from '../../commands/identity/accounts';
import { linkProvider, providerById, signInWith, unlinkProvider } from '../../commands/identity/providers';
import { verifySiwe } from '../../commands/identity/siwe';
import { camelPair } from '../../commands/identity/tokens';
import { CamelPair, IdParam, ProviderLink, TenantSelection } from './schemas';

/**
 * Provider login, callback, link and unlink (spec 000, Authentication and Providers).
 * - POST /auth/login/:providerId → 200 {redirectUrl, state} (OpenID Connect) or the SIWE nonce and message parameters.
 * - GET /auth/callback/:providerId?code&state[&iss] (OpenID Connect), or ?message&signature (SIWE); POST with a JSON
 *   body {message, signature} too (a multi-line message is awkward in a query) → camelCase pair or requiresTenantSelection,
 *   or 201 with the link when the state was started by a link request (then with that user's bearer token).
 * - POST /users/:id/providers/:providerId → 201 link (SIWE: body {message, signature}) or 202 {redirectUrl, state}
 *   (OpenID Connect: the link is made at the callback). Only the user themself links (not an impersonator).
 * - DELETE /users/:id/providers/:providerId → 204; the user themself or users.update.
 */
const ProviderParams = z.object({ providerId: z.string().min(1).max(64) });
const UserProviderParams = IdParam.extend(ProviderParams.shape);
const RedirectStart = z.object({ redirectUrl: z.string(), state: z.string() });
const SiweStart = z.object({
  nonce: z.string(), domain: z.string(), uri: z.string(), version: z.literal('1'), chainId: z.number().int(), chainIds: z.array(z.number().int()),
  statement: z.string(), issuedAt: z.string(), expirationTime: z.string(),
});
const CallbackInput = z.record(z.string(), z.string().max(4096));
const SignedMessage = z.object({ message: z.string().max(4096), signature: z.string().max(200) });

const camelOutcome = (o: SessionOutcome) => (o.kind === 'tokens' ? camelPair(o.tokens) : { requiresTenantSelection: true as const, sessionToken: o.sessionToken, tenants: o.tenants });

export const registerProviderWrites = (app: FastifyInstance, kernel: Kernel): void => {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const pub = { access: 'public' } as const;
  const bearer = { access: 'bearer' } as const;

  r.post('/auth/login/:providerId', {
    config: pub,
    schema: { params: ProviderParams, response: { 200: z.union([RedirectStart, SiweStart]) } },
  }, async (request) => providerById(kernel, request.params.providerId).start({ kind: 'login' }));

  const callback = async (providerId: string, input: Record<string, string>, request: FastifyRequest, reply: FastifyReply) => {
    const traceId = request.id;
    const { identity: found, intent } = await providerById(kernel, providerId).complete(input);
    if (intent.kind === 'link') {
      // a link completes only with the bearer token of the user who started it: a link URL sent to someone else
      // cannot attach their provider identity to the sender's account (tokens never travel in cookies)
      const token = bearerToken(request.headers.authorization);
      const principal = token ? await kernel.authenticator.authenticate(token) : null;
      if (!principal || principal.userId !== intent.userId || principal.impersonatorId) throw commonErrors.unauthorized('Completing a link needs the access token of the user who started it.');
      return reply.code(201).send(await linkProvider(kernel, traceId, intent.userId, intent.userId, found));
    }
    return reply.code(200).send(camelOutcome(await signInWith(kernel, traceId, found)));
  };
  const CallbackResponse = { 200: z.union([CamelPair, TenantSelection]), 201: ProviderLink };
  r.get('/auth/callback/:providerId', { config: pub, schema: { params: ProviderParams, querystring: CallbackInput, response: CallbackResponse } },
    (request, reply) => callback(request.params.providerId, request.query, request, reply));
  r.post('/auth/callback/:providerId', { config: pub, schema: { params: ProviderParams, body: CallbackInput, response: CallbackResponse } },
    (request, reply) => callback(request.params.providerId, request.body, request, reply));

  /** the user must be a member of the caller's tenant (another tenant's id is 404) */
  const member = async (p: Principal, userId: string) => {
    if (!(await findUser(kernel.db, p.tenantId, userId))) throw commonErrors.notFound('The user does not exist.');
  };

  r.post('/users/:id/providers/:providerId', {
    config: bearer,
    schema: { params: UserProviderParams, body: SignedMessage.partial().nullish(), response: { 201: ProviderLink, 202: RedirectStart } },
  }, async (request, reply) => {
    const p = request.principal!;
    await member(p, request.params.id);
    // linking proves an external identity of the caller: nobody links one to someone else's account
    if (p.userId !== request.params.id || p.impersonatorId) throw commonErrors.forbidden('Only the user themself can link a provider.');
    const provider = providerById(kernel, request.params.providerId);
    if (provider.type === 'wallet') {
      const found = await verifySiwe(kernel, request.body ?? {});
      return reply.code(201).send(await linkProvider(kernel, request.id, p.userId, p.userId, found));
    }
    const started = await provider.start({ kind: 'link', userId: p.userId, tenantId: p.tenantId });
    if (!('redirectUrl' in started)) throw commonErrors.notFound('This provider cannot be linked by redirection.');
    return reply.code(202).send(started);
  });

  r.delete('/users/:id/providers/:providerId', { config: bearer, schema: { params: UserProviderParams } }, async (request, reply) => {
    const p = request.principal!;
    await member(p, request.params.id);
    if (p.userId !== request.params.id && !hasPermission(p.permissions, 'users.update')) throw commonErrors.forbidden();
    await unlinkProvider(kernel, request.id, p.userId, request.params.id, request.params.providerId);
    return reply.code(204).send();
  });
};
