import { randomBytes } from 'node:crypto';
import swagger from '@fastify/swagger';
import websocket from '@fastify/websocket';
import { trace, type Span } from '@opentelemetry/api';
import Fastify, {
  LogController,
  type FastifyContextConfig,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type RouteHandlerMethod,
} from 'fastify';
import FindMyWay from 'find-my-way';
import { z } from 'zod';
import { ResponseSerializationError } from 'fastify-type-provider-zod';
import { $ZodType, safeEncode } from 'zod/v4/core';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { validatorCompiler } from 'fastify-type-provider-zod';
import { commonErrors } from '../domain/shared/errors';
import { PLATFORM_WILDCARD } from '../domain/shared/permissions';
import type { Principal, RouteAccess } from '../infra/http/auth';
import { bearerToken, hasPermission, isAdmin } from '../infra/http/auth';
import { credentialSchemeFor } from '../infra/http/credentials';
import { pipeBody } from '../infra/http/body-stream';
import { drainUnreadBody } from '../infra/http/drain';
import { JsonDepthGuard, unstorableText } from '../infra/http/json-guard';
import { stringifyJson } from '../infra/http/json';
import type { OperationDoc } from '../infra/http/operation-docs';
import type { Kernel } from '../infra/kernel';
import { PLATFORM_VERSION } from '../infra/kernel';
import type { RoutePlugin } from '../infra/modules';
import { toAuditRecord } from './audit';
import { CorsPolicy } from './cors';
import { registerDocs } from './docs';
import { frameworkProblem, gatewayErrors, problemHandler, rawProblemResponse } from './errors';
import { INTERNAL_KEY_PURPOSE, verifyPrincipal } from './internal-auth';
import type { RouteDoc } from './openapi';
import { MAX_PARAM_LENGTH, openApiTransform, operationKey, PROBLEM_SCHEMA } from './openapi';
import type { WhileSuspended } from '../infra/http/gateway-ports';
import { gatewayPorts, PLATFORM_NAMESPACES } from '../infra/http/gateway-ports';
import { proxyScope } from './proxy';
import type { RateKey } from './rate-limit';
import { rateLimitHeaders, RateLimiter } from './rate-limit';
import { Upstream } from './upstream/client';
import { versionHeaders } from './versioning';
import { registerPages } from './pages';
import { DOCS_POLICY, NO_STORE, securityHeaders } from './security-headers';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
    span?: Span;
    /** the caller's address: the socket's, or in split deployment the one the gateway forwarded (write-api and read-api trust only the gateway) */
    clientAddress: string;
  }
  interface FastifyContextConfig {
    /** who may call the route; bearer when absent */
    access?: RouteAccess['access'];
    permission?: string;
    /** the API namespace (module) of the plugin that registered the route; set by the edge */
    namespace?: string;
    /** the path parameter naming a user: that user may call the route without the permission (their own profile) */
    orSelf?: string;
    /** the route honours (optional) or requires an Idempotency-Key: documented with its 409 */
    idempotency?: 'required' | 'optional';
    /** problem statuses the route answers beyond those its access, path and body imply (OpenAPI) */
    problems?: number[];
    /** the counted resource the route creates (users, records, storage_bytes, …): billing's limit check runs before it (docs/gateway.md) */
    counts?: string;
    /**
     * what a tenant whose subscription is suspended meets on this mutation (spec 001: read-only for
     * its data): 'refused' — it writes the tenant's data (402 subscription-suspended); 'allowed' —
     * it does not, or the spec keeps it open (the caller's own session and account, audit records,
     * money's debit, transfer, hold, confirm and cancel, billing). Every POST, PUT, PATCH and DELETE
     * a token may call must say, or the process does not start (docs/gateway.md lists them).
     */
    whileSuspended?: WhileSuspended;
    /** request headers (lower case) the split gateway forwards to the route beyond its usual few (a webhook's signature header) */
    forwardHeaders?: string[];
    /** what the route's zod schemas cannot say, for its OpenAPI operation: a multipart body, bytes, redirects (infra/http/operation-docs.ts) */
    openapi?: OperationDoc | (() => OperationDoc);
  }
}

export interface AppOptions {
  /** mount the write-api plugins (mutations) */
  write: boolean;
  /** mount the read-api plugins (queries) */
  read: boolean;
  /**
   * the edge's duties: rate limits, strict CORS, X-Tenant-ID stripping, the module check, the
   * API-call audit, version headers (default true; false for write-api and read-api behind a gateway)
   */
  edge?: boolean;
  /**
   * where the principal comes from: the bearer token (default), or the gateway's signed header
   * (write-api and read-api in split deployment trust only the gateway)
   */
  principalFrom?: 'token' | 'gateway';
  /** split deployment: forward mutations to writeUrl and queries to readUrl instead of running handlers here */
  proxy?: { writeUrl: string; readUrl: string };
}

const TRACEPARENT = /^[\da-f]{2}-([\da-f]{32})-[\da-f]{16}-[\da-f]{2}$/;

/** W3C traceparent's trace id when the caller sent one, a fresh one otherwise: the traceId of logs and problems */
const traceIdOf = (req: { headers: Record<string, string | string[] | undefined> }): string => {
  const header = req.headers.traceparent;
  const match = typeof header === 'string' ? TRACEPARENT.exec(header) : null;
  return match?.[1] ?? randomTraceId();
};

// One randomBytes call per 256 trace ids: a call per request cost more than the rest of the edge.
let entropy = Buffer.alloc(0);
let used = 0;
const randomTraceId = (): string => {
  if (used + 16 > entropy.length) {
    entropy = randomBytes(4096);
    used = 0;
  }
  used += 16;
  return entropy.toString('hex', used - 16, used);
};

/**
 * A keep-alive connection whose response is still being written when close() begins becomes idle
 * only afterwards, and the server closes idle connections once, at the start of close(): it would
 * stay open until keepAliveTimeout (72 s) and hold the drain — and the process's stop — that long.
 * While the server drains, the connections that have gone idle are closed every 100 ms.
 */
const closeConnectionsAsTheyIdle = (app: FastifyInstance) => {
  app.addHook('preClose', (done) => {
    const sweep = setInterval(() => app.server.closeIdleConnections(), 100);
    sweep.unref();
    app.server.once('close', () => clearInterval(sweep));
    done();
  });
};

/**
 * Builds the HTTP application of a process: the edge (problems, authentication and permissions,
 * strict CORS, rate limits, the module check, the API-call audit, docs, operational endpoints)
 * around the route plugins of the services it serves — run in-process, or forwarded to write-api
 * and read-api in split deployment (docs/gateway.md).
 */
export const buildApp = async (kernel: Kernel, options: AppOptions): Promise<FastifyInstance> => {
  const { config } = kernel;
  const headers = securityHeaders(config.rootUrl);
  const app = Fastify({
    loggerInstance: kernel.logger,
    // request lines are logged by our onResponse hook; the request id is the traceId
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'traceId' }),
    genReqId: traceIdOf,
    bodyLimit: config.BODY_LIMIT_BYTES,
    // the documents bound every path parameter by it (gateway/openapi.ts)
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // the router's own refusals (bad percent-encoding, an over-long path parameter) and the HTTP
    // parser's (oversized headers, a malformed request line) are problems too, none echoing the input
    frameworkErrors: (error, request, reply) => {
      reply.headers({ ...headers, 'cache-control': NO_STORE });
      void frameworkProblem(reply, error, config.problemsBaseUrl, request.id);
    },
    clientErrorHandler: (error, socket) => rawProblemResponse(error, socket, config.problemsBaseUrl, headers),
    // /api/v1/... is the same API as /v1/... (spec ruling); the OpenAPI documents keep their own path.
    rewriteUrl: (req) => {
      const url = req.url ?? '/';
      return url.startsWith('/api/v1/') && !/^\/api\/v1\/[^/]+\/openapi\.json/.test(url) ? url.slice(4) : url;
    },
  }) as unknown as FastifyInstance;
  closeConnectionsAsTheyIdle(app);

  // JSON only (spec 000: Content-Type application/json on POST and PATCH bodies); routes that take
  // other media (file uploads) add their parser in their own scope.
  app.removeContentTypeParser('text/plain');
  // an empty body sent with Content-Type application/json is no body (a bodyless endpoint accepts it;
  // one that needs a body answers its validation error). A member named __proto__ or constructor is
  // data: JSON.parse makes it an own property, never the object's prototype, and the schemas keep it
  // (domain/shared/json.ts JsonObject) — refusing it called valid JSON invalid (docs/decisions.md).
  const parseJson = app.getDefaultJsonParser('ignore', 'ignore');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') done(null, undefined);
    else void parseJson(request, String(body), done);
  });
  app.setValidatorCompiler(validatorCompiler);
  // Responses are checked against their schemas outside production (spec 000 rule 5).
  app.setSerializerCompiler(config.PLATFORM_ENV === 'production' ? () => stringifyJson : checkedSerializer);
  app.setErrorHandler(problemHandler(config.problemsBaseUrl, config.BODY_LIMIT_BYTES));
  // A shadow router of every route's path answers "which methods exist here?" for 405s; the
  // routes themselves are kept for the OpenAPI documents (their config is final once registered).
  const resources = new ResourceMethods();
  const routes = new Map<string, { config?: FastifyContextConfig; schema?: { body?: unknown } }>();
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      if (method === 'HEAD') continue;
      resources.add(method, route.url);
      routes.set(operationKey(method, route.url), route);
    }
    if (!route.websocket) route.handler = answeredOnce(route.handler);
  });
  // first of the onSend hooks: the answer has begun (answeredOnce)
  app.addHook('onSend', async (_request, reply) => {
    (reply as AnsweringReply)[ANSWERING] = true;
  });
  app.setNotFoundHandler((request) => {
    const allowed = resources.allowed(request.url.split('?')[0] ?? '/');
    throw allowed?.length
      ? commonErrors.methodNotAllowed(request.method, allowed)
      : commonErrors.notFound(`No route matches ${request.method} ${request.url.split('?')[0]}.`);
  });

  // Before anything else: headers every answer carries, and requests refused for their bytes alone.
  app.addHook('onRequest', async (request, reply) => {
    reply.headers(headers).header('cache-control', NO_STORE);
    if (request.url.startsWith('/api-docs')) reply.header('content-security-policy', DOCS_POLICY);
    // the resource a path names is its most specific route, whatever the method: GET /v1/files/upload
    // is a wrong method on the upload (405, Allow: POST), not a file id that is no UUID
    if (request.method !== 'OPTIONS') {
      const allowed = resources.allowed(request.url.split('?')[0] ?? '/');
      const method = request.method === 'HEAD' ? 'GET' : request.method;
      if (allowed ? !allowed.includes(method) : !ACCEPTED_METHODS.has(request.method))
        throw commonErrors.methodNotAllowed(request.method, allowed ?? []);
    }
    if (/%00/i.test(request.url))
      throw commonErrors.validation([
        {
          field: nulFieldOfUrl(request.url),
          message: 'text must not contain the NUL character (U+0000)',
          code: 'NUL_CHARACTER',
        },
      ]);
  });
  // Fastify answers a body it stopped reading (over the limit, a parser's refusal) with Connection:
  // close, and a client still sending then gets a reset instead of the answer: a body declared small
  // enough is dropped as it arrives and the connection kept (infra/http/drain.ts)
  app.addHook('onSend', async (request, reply) => {
    if (reply.getHeader('connection') === 'close' && drainUnreadBody(request)) reply.removeHeader('connection');
  });
  // JSON nesting is bounded while the body streams in, before any parser (or the proxy) sees it
  app.addHook('preParsing', async (request, _reply, payload) =>
    (request.headers['content-type'] ?? '').includes('json') ? pipeBody(payload, new JsonDepthGuard()) : payload,
  );

  const tracer = trace.getTracer('platform');
  const edge = options.edge ?? true;
  const principalOf = options.principalFrom === 'gateway' ? gatewayPrincipal(kernel) : tokenPrincipal(kernel);
  // behind the gateway the socket is the gateway's; it sets X-Forwarded-For itself (never a client's)
  app.decorateRequest('clientAddress', '');
  app.addHook('onRequest', async (request) => {
    const forwarded = options.principalFrom === 'gateway' ? request.headers['x-forwarded-for'] : undefined;
    request.clientAddress =
      typeof forwarded === 'string' && forwarded !== '' ? forwarded.split(',')[0]!.trim() : request.ip;
  });
  const guard = edge ? edgeGuard(kernel) : null;
  app.addHook('onRequest', async (request, reply) => {
    request.span = tracer.startSpan(`HTTP ${request.method}`, {
      attributes: { 'http.method': request.method, 'http.target': request.url, traceId: request.id },
    });
    if (!guard) return authorize(request, principalOf);
    return guard(request, reply, principalOf);
  });
  // PostgreSQL text cannot hold U+0000 or a lone surrogate: refused at the door (body, query string, path)
  // rather than failing deep in a write or a query
  app.addHook('preValidation', async (request) => {
    for (const [part, value] of [
      ['body', request.body],
      ['query', request.query],
      ['params', request.params],
    ] as const) {
      const problem = unstorableText(value);
      if (problem)
        throw commonErrors.validation([{ ...problem, field: problem.field === 'body' ? part : problem.field }]);
    }
  });
  const recorder = edge ? kernel.audit : null;
  app.addHook('onResponse', async (request, reply) => {
    request.span?.setAttributes({ 'http.route': request.routeOptions.url ?? '', 'http.status_code': reply.statusCode });
    request.span?.end();
    request.log.debug(
      { method: request.method, route: request.routeOptions.url, status: reply.statusCode, ms: reply.elapsedTime },
      'request',
    );
  });
  // The API-call record is durable before the answer leaves (DESIGN.md mechanism 10): published on
  // the log, or staged in the audit outbox, with the calls answered at the same moment (group
  // commit). One that neither could take is logged as lost; the answer still goes out — what the
  // request did is done, and refusing it now would only invite a retry.
  if (recorder)
    app.addHook('onSend', async (request, reply, payload) => {
      if (UNLIMITED.has(request.routeOptions.url ?? '')) return payload;
      const p = request.principal;
      const userAgent = request.headers['user-agent'];
      try {
        await recorder.record(
          toAuditRecord(
            {
              method: request.method,
              route: request.routeOptions.url ?? null,
              status: reply.statusCode,
              latencyMs: Math.round(reply.elapsedTime * 1000) / 1000,
              actorId: p ? (p.impersonatorId ? `${p.userId} (by ${p.impersonatorId})` : p.userId) : null,
              tenantId: p?.tenantId ?? null,
              clientAddress: request.ip ?? null, // undefined once the client has gone
              userAgent: typeof userAgent === 'string' ? userAgent : null,
              traceId: request.id,
              occurredAt: kernel.clock.now().toISOString(),
            },
            kernel.ids.next(),
          ),
        );
      } catch (error) {
        request.log.error({ err: error }, 'API-call audit record lost: neither the log nor the audit outbox took it');
      }
      return payload;
    });
  if (recorder) app.addHook('onClose', () => recorder.flush());

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Platform API', version: PLATFORM_VERSION },
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
        schemas: { Problem: PROBLEM_SCHEMA },
      },
    },
    transform: openApiTransform,
  });

  // WebSocket routes (the real-time socket of notify); a message is at most 64 KiB (clients send auth and pings)
  await app.register(websocket, { options: { maxPayload: 65_536 } });
  registerOperational(app, kernel);
  const routeDoc = (key: string): RouteDoc | null => {
    const route = routes.get(key);
    if (!route) return null;
    const c = route.config ?? {};
    return {
      access: c.access ?? 'bearer',
      namespace: c.namespace,
      idempotency: c.idempotency,
      problems: c.problems,
      hasBody: Boolean(route.schema?.body),
      openapi: c.openapi,
    };
  };
  registerDocs(app, config.rootUrl, config.API_SNAPSHOT_DIR, (key, path) => {
    const route = routeDoc(key);
    return route ? { route, rateLimited: !UNLIMITED.has(path) } : null;
  });
  // the pages identity mail links open by default (APP_URL unset): served where clients arrive
  if (edge) registerPages(app);

  const upstreams = options.proxy ? openUpstreams(app, kernel, options.proxy) : null;
  const plugins = [
    ...(options.write ? kernel.modules.write.map((p) => ({ plugin: p, upstream: upstreams?.write ?? null })) : []),
    ...(options.read ? kernel.modules.read.map((p) => ({ plugin: p, upstream: upstreams?.read ?? null })) : []),
  ];
  for (const { plugin, upstream } of plugins) await app.register(scoped(plugin, kernel, upstream), { prefix: '/v1' });
  return app;
};

/**
 * Responses checked against their zod schema, then written by stringifyJson (bigints as strings,
 * RawJson verbatim): what fastify-type-provider-zod's serializer does, with our writer.
 */
const checkedSerializer = ({ schema, method, url }: { schema: unknown; method: string; url: string }) => {
  const zod = schema instanceof $ZodType ? schema : (schema as { properties?: unknown }).properties;
  if (!(zod instanceof $ZodType)) throw new Error(`the response schema of ${method} ${url} is not a zod schema`);
  return (data: unknown): string => {
    const result = safeEncode(zod, data);
    if (result.error) throw new ResponseSerializationError(method, url, { cause: result.error });
    return stringifyJson(result.data);
  };
};

const MUTATIONS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * A mutation a token may call declares what a suspended tenant meets there (config.whileSuspended):
 * a new route must choose, rather than inherit a rule by its method. Public routes have no tenant
 * to admit (no token), so they need not.
 */
export const assertSuspensionDeclared = (route: {
  method: string | string[];
  url: string;
  config?: FastifyContextConfig;
}): void => {
  const mutation = [route.method].flat().some((m) => MUTATIONS.has(m));
  if (!mutation || route.config?.access === 'public' || route.config?.whileSuspended !== undefined) return;
  throw new Error(
    `${[route.method].flat().join(',')} ${route.url} must declare config.whileSuspended: 'refused' (it writes the tenant's data: 402 while its subscription is suspended) or 'allowed' (docs/gateway.md)`,
  );
};

const ANSWERING = Symbol('answering');
type AnsweringReply = FastifyReply & { [ANSWERING]?: true };

/**
 * An async handler that answered with reply.send() and resolved with nothing waits for its answer
 * to leave. Fastify sends again when such a handler resolves while the answer is still in its
 * onSend hooks (reply.sent is false until the response ends) — and the edge's onSend waits for the
 * API-call audit record to be durable, so a second head would be written over the first.
 */
const answeredOnce = (handler: RouteHandlerMethod): RouteHandlerMethod =>
  async function (this: FastifyInstance, request, reply) {
    const result: unknown = await handler.call(this, request, reply);
    return result === undefined && (reply as AnsweringReply)[ANSWERING] ? reply : result;
  };

/**
 * a route plugin in its own encapsulated context, its routes tagged with its namespace for the
 * docs and the module check; in split deployment its handlers forward to the upstream role
 */
const scoped =
  (plugin: RoutePlugin, kernel: Kernel, upstream: Upstream | null) => async (instance: FastifyInstance) => {
    instance.addHook('onRoute', (route) => {
      assertSuspensionDeclared(route);
      route.schema = {
        ...route.schema,
        tags: [plugin.namespace],
        ...(route.config?.access === 'public' ? {} : { security: [{ bearer: [] }] }),
      };
      route.config = { ...route.config, namespace: plugin.namespace };
    });
    if (upstream) proxyScope(instance, kernel, upstream);
    await plugin.register(instance, kernel);
  };

const openUpstreams = (app: FastifyInstance, kernel: Kernel, urls: { writeUrl: string; readUrl: string }) => {
  const options = {
    timeoutMs: kernel.config.GRPC_CALL_TIMEOUT_MS,
    clock: kernel.clock,
    maxSockets: kernel.config.UPSTREAM_MAX_SOCKETS,
  };
  const write = new Upstream('write-api', urls.writeUrl, options);
  const read = new Upstream('read-api', urls.readUrl, options);
  for (const [name, url] of [
    ['write-api', urls.writeUrl],
    ['read-api', urls.readUrl],
  ] as const) {
    kernel.health.register(name, async () => {
      const res = await fetch(new URL('/live', url), { signal: AbortSignal.timeout(2000) });
      if (!res.ok) throw new Error(`${name} answered ${res.status}`);
    });
  }
  app.addHook('onClose', async () => {
    write.close();
    read.close();
  });
  return { write, read };
};

type PrincipalSource = (request: FastifyRequest) => Promise<Principal | null>;

/** the bearer token, verified by the credential scheme whose form it has (module keys), else by the installed authenticator */
const tokenPrincipal =
  (kernel: Kernel): PrincipalSource =>
  async (request) => {
    const token = bearerToken(request.headers.authorization);
    if (!token) return null;
    const scheme = credentialSchemeFor(kernel, token);
    return scheme ? scheme.authenticate(token, request.headers) : kernel.authenticator.authenticate(token);
  };

/** the principal the gateway verified and signed (split deployment); a client's own token counts for nothing */
const gatewayPrincipal = (kernel: Kernel): PrincipalSource => {
  const key = kernel.engines.secrets.key(INTERNAL_KEY_PURPOSE);
  return async (request) => verifyPrincipal(key, request.headers, request.id, kernel.clock.now().getTime());
};

/** authentication and permissions, declared per route and enforced before any handler (spec 000 rule 11) */
const authorize = async (request: FastifyRequest, principalOf: PrincipalSource): Promise<void> => {
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

/** where in a URL a %00 sits: the name of the query parameter that holds it, or "path" */
const nulFieldOfUrl = (url: string): string => {
  const query = url.indexOf('?');
  if (query < 0 || url.slice(0, query).toLowerCase().includes('%00')) return 'path';
  const pair =
    url
      .slice(query + 1)
      .split('&')
      .find((p) => /%00/i.test(p)) ?? '';
  const name = pair.split('=')[0] ?? '';
  return name && !/%00/i.test(name) ? safeDecode(name) : 'query';
};
const safeDecode = (text: string): string => {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return 'query';
  }
};

/** the route lets a user act on their own record (config.orSelf names the path parameter holding a user id) */
const isSelf = (request: FastifyRequest, userId: string): boolean => {
  const param = request.routeOptions.config?.orSelf;
  return param !== undefined && (request.params as Record<string, unknown> | undefined)?.[param] === userId;
};

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

/** probes of load balancers and orchestrators: neither rate limited nor audited */
const UNLIMITED = new Set(['/live', '/ready']);

/**
 * The edge, in order (spec 000 behaviour rules): X-Tenant-ID from a client is dropped (the tenant
 * comes from the token only); strict CORS, answering preflights; authentication and permissions;
 * the rate limits, which need the principal (a refused token still counts against the client
 * address); a tenant-only CORS origin; the module check, before any handler or downstream call.
 */
const edgeGuard = (kernel: Kernel) => {
  const { config } = kernel;
  const ports = () => gatewayPorts(kernel);
  const limiter = new RateLimiter(kernel.engines.cache, kernel.clock, kernel.logger);
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
    if (!decision.allowed) throw commonErrors.rateLimited(decision.retryAfterSeconds);
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
      // a valid token refused for its permissions counts against its user, whatever the answer
      if (!reply.hasHeader('x-ratelimit-limit')) await limit(request, reply, request.principal);
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

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
/** methods the platform answers at all; others (QUERY, PROPFIND, …) are 405 before their body is read */
const ACCEPTED_METHODS = new Set<string>([...METHODS, 'HEAD', 'OPTIONS']);

/**
 * The methods of each resource: a route's path with its parameters named by position, so that
 * /files/:id and /files/:fileId/… are one shape. A request's resource is the most specific path
 * that matches it, whatever the method (the router's order: static segments before parameters
 * before wildcards) — what the OpenAPI documents list as one path with its operations.
 */
class ResourceMethods {
  readonly #router = FindMyWay();
  readonly #methods = new Map<string, Set<string>>();

  add(method: string, url: string): void {
    let i = 0;
    const shape = url.replace(/:[A-Za-z0-9_]+/g, () => `:p${i++}`);
    let methods = this.#methods.get(shape);
    if (!methods) {
      methods = new Set();
      this.#methods.set(shape, methods);
      this.#router.on('GET', shape, () => undefined, { shape });
    }
    methods.add(method);
  }

  /** the methods of the resource at a path, in a fixed order; null when no route has that path */
  allowed(path: string): string[] | null {
    const found = this.#router.find('GET', path);
    const methods = found && this.#methods.get((found.store as { shape: string }).shape);
    return methods ? METHODS.filter((m) => methods.has(m)) : null;
  }
}

const HealthComponent = z.object({
  status: z.enum(['healthy', 'degraded', 'unhealthy']),
  latencyMs: z.number().nullable(),
  error: z.string().nullable(),
});

/** probes and health: documented in the gateway namespace */
const registerOperational = (app: FastifyInstance, kernel: Kernel): void => {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['gateway'];
  r.get(
    '/live',
    {
      config: { access: 'public', namespace: 'gateway' },
      schema: {
        tags,
        summary: 'Liveness: the process answers',
        response: { 200: z.object({ status: z.literal('ok') }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );
  r.get(
    '/ready',
    {
      config: { access: 'public', namespace: 'gateway' },
      schema: {
        tags,
        summary: 'Readiness: migrations, the log and the projections are ready',
        response: {
          200: z.object({ status: z.literal('ready') }),
          503: z.object({ status: z.literal('not_ready'), reason: z.string() }),
        },
      },
    },
    async (_request, reply) => {
      const reason = kernel.notReadyReason;
      return reason ? reply.code(503).send({ status: 'not_ready' as const, reason }) : { status: 'ready' as const };
    },
  );
  const Report = z.object({
    status: HealthComponent.shape.status,
    version: z.string(),
    uptime: z.string(),
    components: z.record(z.string(), HealthComponent),
  });
  r.get(
    '/health',
    {
      // the platform's infrastructure is the platform owner's to see, not any tenant's Owner (docs/decisions.md)
      config: { access: 'permission', permission: PLATFORM_WILDCARD, namespace: 'gateway' },
      schema: {
        tags,
        security: [{ bearer: [] }],
        summary: "Each configured component's status and latency (the platform owner: platform.*)",
        response: {
          200: Report.describe('every component healthy'),
          207: Report.describe('some component degraded'),
          503: Report.describe('some component unhealthy'),
        },
      },
    },
    async (_request, reply) => {
      const report = await kernel.health.report();
      return reply.code(report.status === 'healthy' ? 200 : report.status === 'degraded' ? 207 : 503).send(report);
    },
  );
};
