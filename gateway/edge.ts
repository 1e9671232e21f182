import { httpWorkerIndex } from '../infra/cluster/worker';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { commonErrors, DomainError, defineErrors } from '../domain/shared/errors';
import type { Principal } from '../infra/http/auth';
import { isAdmin } from '../infra/http/auth';
import { gatewayPorts, PLATFORM_NAMESPACES } from '../infra/http/gateway-ports';
import { hostWide } from '../infra/http/host';
import type { Kernel } from '../infra/kernel';
import type { PrincipalSource } from './authentication';
import { authorize } from './authentication';
import { CorsPolicy } from './cors';
import type { RateKey } from './rate-limit';
import { rateLimitHeaders, RateLimiter } from './rate-limit';
import { versionHeaders } from './versioning';
import { rateLimitRefusals } from '../infra/observability/metrics';
import { METRICS_PATH } from '../infra/observability/metrics-route';

/** The gateway's own refusals beyond the common catalog. */
export const gatewayErrors = defineErrors({
  moduleNotFound: (namespace: string) => ({
    status: 404,
    suffix: 'module-not-found',
    title: 'Module not found',
    detail: `The module ${namespace} is not installed for this tenant.`,
  }),
});

/**
 * The caller of a request no route matches (404, 405), for its rate-limit key only: with a valid
 * token it counts against its user like any authenticated request, never against the address.
 */
const unroutedPrincipal = async (
  request: FastifyRequest,
  principalOf: PrincipalSource,
): Promise<Principal | undefined> => {
  if (request.routeOptions.url || !request.headers.authorization) return undefined;
  return (await principalOf(request).catch(() => null)) ?? undefined;
};

/** probes of load balancers and orchestrators, and metrics scrapes: neither rate limited nor audited */
export const UNLIMITED = new Set(['/live', '/ready', METRICS_PATH]);

/**
 * The edge, in order (spec 000 behaviour rules): X-Tenant-ID from a client is dropped (the tenant
 * comes from the token only); strict CORS, answering preflights; authentication and permissions;
 * the rate limits, which need the principal (a refused token still counts against the client
 * address); a tenant-only CORS origin; the module check, before any handler or downstream call.
 */
const edgeGuard = (kernel: Kernel) => {
  const { config } = kernel;
  const ports = () => gatewayPorts(kernel);
  // HTTP workers of one cluster share a port, so a burst spreads over them: each hit waits for the
  // shared count (an IPC or Redis round trip) to keep the limit exact across them (docs/decisions.md)
  const limiter = new RateLimiter(
    kernel.engines.cache,
    kernel.clock,
    kernel.logger,
    httpWorkerIndex() === null ? {} : { backgroundBelow: 0 },
  );
  const cors = new CorsPolicy(config.CORS_ALLOWED_ORIGINS, config.rootUrl, ports);
  const deprecation = versionHeaders(config);
  const versioned = Object.keys(deprecation).length > 0;

  // A failing billing port must not fail requests: the configured default ceiling applies meanwhile.
  let lastPortError = 0;
  const tenantCeiling = (tenantId: string): Promise<number | null> =>
    ports()
      .tenantRateCeiling(tenantId)
      .catch((error: unknown) => {
        if (Date.now() - lastPortError > 60_000) {
          lastPortError = Date.now();
          kernel.logger.warn({ err: error }, 'tenant rate ceiling unavailable; using RATE_LIMIT_TENANT_PER_MIN');
        }
        return null;
      });

  const limit = async (
    request: FastifyRequest,
    reply: FastifyReply,
    principal: Principal | undefined,
  ): Promise<void> => {
    if (UNLIMITED.has(request.routeOptions.url ?? '')) return;
    const keys: RateKey[] = principal
      ? [
          // a module's key counts per module within the tenant (the scope of notify's per-module limit), a person per user
          principal.source !== undefined
            ? { key: `rl:m:${principal.tenantId}:${principal.source}`, limit: config.RATE_LIMIT_MODULE_PER_MIN }
            : {
                key: `rl:u:${principal.tenantId}:${principal.userId}`,
                limit: isAdmin(principal) ? config.RATE_LIMIT_ADMIN_PER_MIN : config.RATE_LIMIT_USER_PER_MIN,
              },
          {
            key: `rl:t:${principal.tenantId}`,
            limit: (await tenantCeiling(principal.tenantId)) ?? config.RATE_LIMIT_TENANT_PER_MIN,
          },
        ]
      : [{ key: `rl:a:${request.ip}`, limit: config.RATE_LIMIT_ANONYMOUS_PER_MIN }];
    const decision = await limiter.check(keys);
    reply.headers(rateLimitHeaders(decision));
    if (!decision.allowed) {
      rateLimitRefusals.inc({ layer: decision.layer, caller: principal ? 'authenticated' : 'anonymous' });
      throw commonErrors.rateLimited(decision.retryAfterSeconds);
    }
  };

  return async (
    request: FastifyRequest,
    reply: FastifyReply,
    principalOf: PrincipalSource,
  ): Promise<FastifyReply | undefined> => {
    if (request.headers['x-tenant-id'] !== undefined) delete request.headers['x-tenant-id'];
    if (versioned && request.url.startsWith('/v1/')) reply.headers(deprecation);
    const origin = cors.crossOrigin(request);
    let corsState: 'sent' | 'allowed' | 'tenant' | null = null;
    try {
      // A preflight, a refused origin and a refused token have no principal: they count against the client address.
      if (origin) corsState = await cors.beforeAuth(request, reply, origin, () => limit(request, reply, undefined));
      if (corsState === 'sent') return reply;
      await authorize(request, principalOf);
    } catch (error) {
      // a refusal counts: a valid token refused for its permissions against its user, a refused
      // token against the address. A failure on the server's side (a credential store that did not
      // answer) is not the caller's doing and counts against nobody: it answers 5xx, never 429.
      const refused = error instanceof DomainError && error.status < 500;
      if (refused && !reply.hasHeader('x-ratelimit-limit')) await limit(request, reply, request.principal);
      throw error;
    }
    await limit(request, reply, request.principal ?? (await unroutedPrincipal(request, principalOf)));
    if (origin && corsState === 'tenant') await cors.afterAuth(reply, origin, request.principal?.tenantId ?? null);
    const namespace = request.routeOptions.config?.namespace;
    if (namespace && request.principal && !PLATFORM_NAMESPACES.has(namespace)) {
      const installed = await ports().installedModules(request.principal.tenantId);
      if (installed !== 'all' && !installed.has(namespace)) throw gatewayErrors.moduleNotFound(namespace);
      if ((await ports().moduleStatus(request.principal.tenantId, namespace)) === 'absent')
        throw gatewayErrors.moduleNotFound(namespace);
    }
    // the data layer's paths name their module: /v1/data/<module>/… answers only for a module the tenant has installed
    const dataModule =
      namespace === 'data' ? (request.params as Record<string, unknown> | undefined)?.module : undefined;
    // a module's key reaches its own module's data only: another's answers as a module that is not installed
    if (
      typeof dataModule === 'string' &&
      request.principal &&
      ((request.principal.source !== undefined && request.principal.source !== dataModule) ||
        (await ports().moduleStatus(request.principal.tenantId, dataModule)) !== 'installed')
    ) {
      throw gatewayErrors.moduleNotFound(dataModule);
    }
    // billing: the subscription's status and the plan's limits (spec 001, Limit enforcement flow)
    const route = request.routeOptions;
    if (request.principal && route.url) {
      await ports().admit({
        tenantId: request.principal.tenantId,
        method: request.method,
        route: route.url,
        namespace: namespace ?? null,
        counts: route.config?.counts,
        whileSuspended: route.config?.whileSuspended,
      });
    }
    return undefined;
  };
};

/**
 * The edge's door (registered by the edge role only): after the host's own checks, every request
 * passes edgeGuard, its principal read from the bearer token.
 */
export const edgeDoor = (kernel: Kernel, principalOf: PrincipalSource) =>
  hostWide(async (app) => {
    const guard = edgeGuard(kernel);
    app.addHook('onRequest', async (request, reply) => guard(request, reply, principalOf));
  });
