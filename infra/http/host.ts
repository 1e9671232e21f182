import { randomBytes } from 'node:crypto';
import websocket from '@fastify/websocket';
import { context, isSpanContextValid, trace } from '@opentelemetry/api';
import { getRPCMetadata, RPCType } from '@opentelemetry/core';
import Fastify, {
  LogController,
  type FastifyContextConfig,
  type FastifyInstance,
  type FastifyPluginAsync,
  type FastifyPluginOptions,
  type FastifyReply,
  type RouteHandlerMethod,
} from 'fastify';
import FindMyWay from 'find-my-way';
import { z } from 'zod';
import { ResponseSerializationError } from 'fastify-type-provider-zod';
import { $ZodType, safeEncode } from 'zod/v4/core';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { validatorCompiler } from 'fastify-type-provider-zod';
import { commonErrors } from '../../domain/shared/errors';
import { PLATFORM_WILDCARD } from '../../domain/shared/permissions';
import type { Kernel } from '../kernel';
import type { Principal, RouteAccess } from './auth';
import { pipeBody } from './body-stream';
import { drainUnreadBody } from './drain';
import type { WhileSuspended } from './gateway-ports';
import { JsonDepthGuard, unstorableText } from './json-guard';
import { stringifyJson } from './json';
import type { OperationDoc } from './operation-docs';
import { frameworkProblem, problemHandler, rawProblemResponse } from './problem-handler';
import { DOCS_POLICY, NO_STORE, securityHeaders } from './security-headers';
import { measureHttp, registerMetricsRoute } from '../observability/metrics-route';

/**
 * The HTTP host every role runs (all-in-one, gateway, write-api, read-api): Fastify with the
 * platform's problems, security headers, body limits and JSON guards, 405s, drain on close,
 * tracing and request logs, and the operational endpoints. What only the edge does —
 * authentication at the door, CORS, rate limits, the module check, billing admission, the API-call
 * audit, proxying, versions and docs — is registered on it by gateway/ (gateway/app.ts composes).
 */

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
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

/** the longest path parameter the router accepts (Fastify maxParamLength); a longer one is 400 TOO_LONG */
export const MAX_PARAM_LENGTH = 100;

/** the key of an operation: method and the route's path in OpenAPI form (/v1/wallets/{id}) */
export const operationKey = (method: string, url: string): string =>
  `${method.toUpperCase()} ${url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`;

/** what a route declared, as registered (its config is final once registered): for the OpenAPI documents */
export interface RegisteredRoute {
  config?: FastifyContextConfig;
  schema?: { body?: unknown };
}

export interface HttpHost {
  app: FastifyInstance;
  /** the route of an operation (operationKey), once registered */
  route(key: string): RegisteredRoute | undefined;
}

/**
 * A plugin whose hooks and decorations apply to the whole host rather than to a scope of its own
 * (what fastify-plugin marks): the edge's hooks run for every route, in the order registered.
 */
export const hostWide = <O extends FastifyPluginOptions>(plugin: FastifyPluginAsync<O>): FastifyPluginAsync<O> =>
  Object.assign(plugin, { [Symbol.for('skip-override')]: true });

const TRACEPARENT = /^[\da-f]{2}-([\da-f]{32})-[\da-f]{16}-[\da-f]{2}$/;

/**
 * The traceId of logs and problems: the request's server span's when tracing is on (so a log line
 * names the trace exported for it), else the W3C traceparent's trace id when the caller sent one,
 * else a fresh one.
 */
const traceIdOf = (req: { headers: Record<string, string | string[] | undefined> }): string => {
  const span = trace.getActiveSpan()?.spanContext();
  if (span && isSpanContextValid(span)) return span.traceId;
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
 * Creates the HTTP host of a process: everything every role answers the same way, before any
 * route. `forwardedFor`: the caller's address is the X-Forwarded-For the gateway set (write-api
 * and read-api behind a gateway), else the socket's.
 */
export const createHttpHost = (kernel: Kernel, options: { forwardedFor: boolean }): HttpHost => {
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
    // answered by the readiness gate below instead: a problem with Retry-After, not Fastify's bare 503
    return503OnClosing: false,
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
  measureHttp(app);

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
  const routes = new Map<string, RegisteredRoute>();
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

  let draining = false;
  app.addHook('preClose', (done) => {
    draining = true;
    done();
  });
  // Before anything else: headers every answer carries, and requests refused for their bytes alone.
  app.addHook('onRequest', async (request, reply) => {
    reply.headers(headers).header('cache-control', NO_STORE);
    // a process starting or draining judges nothing (a valid token is not refused for keys not yet
    // loaded): 503 with Retry-After, which clients and the gateway retry; /live and /ready answer
    if (!ALWAYS_ANSWERED.has(request.url)) {
      if (draining) {
        reply.header('connection', 'close');
        throw commonErrors.notReady('shutting down');
      }
      const starting = kernel.startingReason;
      if (starting) throw commonErrors.notReady(starting);
    }
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

  // behind the gateway the socket is the gateway's; it sets X-Forwarded-For itself (never a client's)
  app.decorateRequest('clientAddress', '');
  app.addHook('onRequest', async (request) => {
    const forwarded = options.forwardedFor ? request.headers['x-forwarded-for'] : undefined;
    request.clientAddress =
      typeof forwarded === 'string' && forwarded !== '' ? forwarded.split(',')[0]!.trim() : request.ip;
  });
  // the server span (the HTTP instrumentation's) takes the route's name: `POST /v1/tally/counters`
  app.addHook('onRequest', async (request) => {
    const meta = getRPCMetadata(context.active());
    if (meta?.type === RPCType.HTTP && request.routeOptions.url) meta.route = request.routeOptions.url;
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
  app.addHook('onResponse', async (request, reply) => {
    request.log.debug(
      { method: request.method, route: request.routeOptions.url, status: reply.statusCode, ms: reply.elapsedTime },
      'request',
    );
  });
  return { app, route: (key) => routes.get(key) };
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

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
/** methods the platform answers at all; others (QUERY, PROPFIND, …) are 405 before their body is read */
const ACCEPTED_METHODS = new Set<string>([...METHODS, 'HEAD', 'OPTIONS']);
/** what a starting or draining process still answers: how it stands */
const ALWAYS_ANSWERED = new Set(['/live', '/ready']);

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

/**
 * Routes every role serves beside its services: WebSocket routes (the real-time socket of notify;
 * a message is at most 64 KiB, clients send auth and pings) and the operational endpoints.
 * Registered after the OpenAPI documents, which list the probes.
 */
export const registerHostRoutes = async (app: FastifyInstance, kernel: Kernel): Promise<void> => {
  await app.register(websocket, { options: { maxPayload: 65_536 } });
  registerOperational(app, kernel);
  registerMetricsRoute(app, kernel);
};

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
