import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { CamelPair, IdParam, ProviderLinkView, TenantSelection } from '../../domain/identity/views';
import { bearerToken, callerOf } from '../../infra/http/auth';
import type { Kernel } from '../../infra/kernel';
import type { CallbackAnswer } from '../../commands/identity/providers';
import { completeCallback, requestLink, startLogin, unlinkProvider } from '../../commands/identity/providers';
import type { IdentityRoutes } from './http';
import { bearer, noBody, ownSession, pub, typed } from './http';

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
  nonce: z.string(),
  domain: z.string(),
  uri: z.string(),
  version: z.literal('1'),
  chainId: z.number().int(),
  chainIds: z.array(z.number().int()),
  statement: z.string(),
  issuedAt: z.string(),
  expirationTime: z.string(),
});
const CallbackInput = z.record(z.string(), z.string().max(4096));
const SignedMessage = z.object({ message: z.string().max(4096), signature: z.string().max(200) });
const CallbackResponse = { 200: z.union([CamelPair, TenantSelection]), 201: ProviderLinkView };

/** the request's own bearer token, verified: only a link's completion needs it (the route is public) */
const bearerCaller = (kernel: Kernel, request: FastifyRequest) => async () => {
  const token = bearerToken(request.headers.authorization);
  return token ? kernel.authenticator.authenticate(token) : null;
};

const answer = (reply: FastifyReply, done: CallbackAnswer) =>
  done.kind === 'linked' ? reply.code(201).send(done.link) : reply.code(200).send(done.session);

export const providerRoutes: IdentityRoutes = (app, kernel) => {
  const r = typed(app);

  // 503: an OpenID provider that cannot be reached
  r.post(
    '/auth/login/:providerId',
    {
      config: { ...pub, problems: [503] },
      schema: { params: ProviderParams, response: { 200: z.union([RedirectStart, SiweStart]) } },
    },
    async (request) => startLogin(kernel, request.params.providerId),
  );

  // 401: a refused or replayed callback; 403 account-locked; 409: an account has the identity's email (sign in and link from it), or the identity is another user's
  const callback = { ...pub, problems: [401, 403, 409, 503] };
  r.get(
    '/auth/callback/:providerId',
    { config: callback, schema: { params: ProviderParams, querystring: CallbackInput, response: CallbackResponse } },
    async (request, reply) =>
      answer(
        reply,
        await completeCallback(
          kernel,
          request.id,
          request.params.providerId,
          request.query,
          bearerCaller(kernel, request),
        ),
      ),
  );
  r.post(
    '/auth/callback/:providerId',
    { config: callback, schema: { params: ProviderParams, body: CallbackInput, response: CallbackResponse } },
    async (request, reply) =>
      answer(
        reply,
        await completeCallback(
          kernel,
          request.id,
          request.params.providerId,
          request.body,
          bearerCaller(kernel, request),
        ),
      ),
  );

  r.post(
    '/users/:id/providers/:providerId',
    {
      config: { ...bearer, ...ownSession, problems: [409, 503] },
      schema: {
        params: UserProviderParams,
        body: SignedMessage.partial().nullish(),
        response: { 201: ProviderLinkView, 202: RedirectStart },
      },
    },
    async (request, reply) => {
      const done = await requestLink(
        kernel,
        request.id,
        callerOf(request),
        request.params.id,
        request.params.providerId,
        request.body ?? {},
      );
      return done.kind === 'linked'
        ? reply.code(201).send(done.link)
        : reply.code(202).send({ redirectUrl: done.redirectUrl, state: done.state });
    },
  );

  r.delete(
    '/users/:id/providers/:providerId',
    {
      config: { ...bearer, ...ownSession },
      schema: { params: UserProviderParams, response: { 204: z.null().describe('the link is removed') } },
    },
    async (request, reply) => {
      await unlinkProvider(kernel, request.id, callerOf(request), request.params.id, request.params.providerId);
      return noBody(reply, 204);
    },
  );
};
