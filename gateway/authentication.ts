import type { FastifyRequest } from 'fastify';
import { commonErrors } from '../domain/shared/errors';
import type { Principal } from '../infra/http/auth';
import { bearerToken, hasPermission, isAdmin } from '../infra/http/auth';
import { credentialSchemeFor } from '../infra/http/credentials';
import { hostWide } from '../infra/http/host';
import type { Kernel } from '../infra/kernel';
import { INTERNAL_KEY_PURPOSE, verifyPrincipal } from './internal-auth';

export type PrincipalSource = (request: FastifyRequest) => Promise<Principal | null>;

/** the bearer token, verified by the credential scheme whose form it has (module keys), else by the installed authenticator */
export const tokenPrincipal =
  (kernel: Kernel): PrincipalSource =>
  async (request) => {
    const token = bearerToken(request.headers.authorization);
    if (!token) return null;
    const scheme = credentialSchemeFor(kernel, token);
    return scheme ? scheme.authenticate(token, request.headers) : kernel.authenticator.authenticate(token);
  };

/** the principal the gateway verified and signed (split deployment); a client's own token counts for nothing */
export const gatewayPrincipal = (kernel: Kernel): PrincipalSource => {
  const key = kernel.engines.secrets.key(INTERNAL_KEY_PURPOSE);
  return async (request) => verifyPrincipal(key, request.headers, request.id, kernel.clock.now().getTime());
};

/** authentication and permissions, declared per route and enforced before any handler (spec 000 rule 11) */
export const authorize = async (request: FastifyRequest, principalOf: PrincipalSource): Promise<void> => {
  const routeConfig = request.routeOptions.config;
  const access = routeConfig?.access ?? 'bearer';
  if (access === 'public' || !request.routeOptions.url) return;
  const principal = await principalOf(request);
  if (!principal) throw commonErrors.unauthorized();
  request.principal = principal;
  if (access === 'admin' && !isAdmin(principal)) throw commonErrors.forbidden('This endpoint needs an admin role.');
  if (
    access === 'permission' &&
    !hasPermission(principal.permissions, routeConfig.permission ?? '') &&
    !isSelf(request, principal.userId)
  ) {
    throw commonErrors.forbidden(`The permission ${routeConfig.permission} is required.`);
  }
};

/** the route lets a user act on their own record (config.orSelf names the path parameter holding a user id) */
const isSelf = (request: FastifyRequest, userId: string): boolean => {
  const param = request.routeOptions.config?.orSelf;
  return param !== undefined && (request.params as Record<string, unknown> | undefined)?.[param] === userId;
};

/**
 * Behind the edge (write-api and read-api in split deployment, or any role without the edge): each
 * route's access still enforced, on the principal the given source vouches for.
 */
export const routeAccess = (principalOf: PrincipalSource) =>
  hostWide(async (app) => {
    app.addHook('onRequest', async (request) => authorize(request, principalOf));
  });
