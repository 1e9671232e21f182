import { randomBytes } from 'node:crypto';
import swagger from '@fastify/swagger';
import { trace, type Span } from '@opentelemetry/api';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import FindMyWay from 'find-my-way';
import { createSerializerCompiler, jsonSchemaTransform, validatorCompiler } from 'fastify-type-provider-zod';
import { commonErrors } from '../domain/shared/errors';
import { bigintReplacer } from '../infra/eventstore/event-store';
import type { Principal, RouteAccess } from '../infra/http/auth';
import { bearerToken, hasPermission, isAdmin } from '../infra/http/auth';
import type { Kernel } from '../infra/kernel';
import { PLATFORM_VERSION } from '../infra/kernel';
import type { RoutePlugin } from '../infra/modules';
import { registerDocs } from './docs';
import { problemHandler } from './errors';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
    span?: Span;
  }
  interface FastifyContextConfig {
    /** who may call the route; bearer when absent */
    access?: RouteAccess['access'];
    permission?: string;
  }
}

export interface AppOptions {
  /** mount the write-api plugins (mutations) */
  write: boolean;
  /** mount the read-api plugins (queries) */
  read: boolean;
}

const TRACEPARENT = /^[\da-f]{2}-([\da-f]{32})-[\da-f]{16}-[\da-f]{2}$/;

/** W3C traceparent's trace id when the caller sent one, a fresh one otherwise: the traceId of logs and problems */
const traceIdOf = (req: { headers: Record<string, string | string[] | undefined> }): string => {
  const header = req.headers.traceparent;
  const match = typeof header === 'string' ? TRACEPARENT.exec(header) : null;
  return match?.[1] ?? randomBytes(16).toString('hex');
};

/**
 * Builds the HTTP application of a process: the edge (problems, authentication and permissions,
 * docs, operational endpoints) around the route plugins of the services it serves.
 */
export const buildApp = async (kernel: Kernel, options: AppOptions): Promise<FastifyInstance> => {
  const { config } = kernel;
  const app = Fastify({
    loggerInstance: kernel.logger as FastifyBaseLogger,
    disableRequestLogging: true,
    requestIdLogLabel: 'traceId',
    genReqId: traceIdOf,
    bodyLimit: config.BODY_LIMIT_BYTES,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // /api/v1/... is the same API as /v1/... (spec ruling); the OpenAPI documents keep their own path.
    rewriteUrl: (req) => {
      const url = req.url ?? '/';
      return url.startsWith('/api/v1/') && !/^\/api\/v1\/[^/]+\/openapi\.json/.test(url) ? url.slice(4) : url;
    },
  }) as unknown as FastifyInstance;

  // JSON only (spec 000: Content-Type application/json on POST and PATCH bodies); routes that take
  // other media (file uploads) add their parser in their own scope.
  app.removeContentTypeParser('text/plain');
  app.setValidatorCompiler(validatorCompiler);
  // Responses are checked against their schemas outside production (spec 000 rule 5).
  app.setSerializerCompiler(config.PLATFORM_ENV === 'production'
    ? () => (data) => JSON.stringify(data, bigintReplacer)
    : createSerializerCompiler({ replacer: bigintReplacer }));
  app.setErrorHandler(problemHandler(config.problemsBaseUrl, config.BODY_LIMIT_BYTES));
  // A shadow router of every route's path answers "which methods exist here?" for 405s.
  const paths = FindMyWay();
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) if (method !== 'HEAD') paths.on(method as 'GET', route.url, () => undefined);
  });
  app.setNotFoundHandler((request) => {
    const url = request.url.split('?')[0] ?? '/';
    const allowed = METHODS.filter((m) => m !== request.method && paths.find(m, url) !== null);
    throw allowed.length ? commonErrors.methodNotAllowed(request.method, allowed) : commonErrors.notFound(`No route matches ${request.method} ${request.url.split('?')[0]}.`);
  });

  const tracer = trace.getTracer('platform');
  app.addHook('onRequest', async (request) => {
    request.span = tracer.startSpan(`HTTP ${request.method}`, { attributes: { 'http.method': request.method, 'http.target': request.url, traceId: request.id } });
    await authorize(kernel, request);
  });
  app.addHook('onResponse', async (request, reply) => {
    request.span?.setAttributes({ 'http.route': request.routeOptions.url ?? '', 'http.status_code': reply.statusCode });
    request.span?.end();
    request.log.debug({ method: request.method, route: request.routeOptions.url, status: reply.statusCode, ms: reply.elapsedTime }, 'request');
  });

  await app.register(swagger, {
    openapi: { openapi: '3.1.0', info: { title: 'Platform API', version: PLATFORM_VERSION },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } } } },
    transform: jsonSchemaTransform,
  });

  registerOperational(app, kernel);
  registerDocs(app, config.rootUrl);

  const plugins = [...(options.write ? kernel.modules.write : []), ...(options.read ? kernel.modules.read : [])];
  for (const plugin of plugins) await app.register(scoped(plugin, kernel), { prefix: '/v1' });
  return app;
};

/** a route plugin in its own encapsulated context, its routes tagged with its namespace for the docs */
const scoped = (plugin: RoutePlugin, kernel: Kernel) => async (instance: FastifyInstance) => {
  instance.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, tags: [plugin.namespace], ...(route.config?.access === 'public' ? {} : { security: [{ bearer: [] }] }) };
  });
  await plugin.register(instance, kernel);
};

/** authentication and permissions, declared per route and enforced before any handler (spec 000 rule 11) */
const authorize = async (kernel: Kernel, request: FastifyRequest): Promise<void> => {
  const routeConfig = request.routeOptions.config;
  const access = routeConfig?.access ?? 'bearer';
  if (access === 'public' || !request.routeOptions.url) return;
  const token = bearerToken(request.headers.authorization);
  if (!token) throw commonErrors.unauthorized();
  const principal = await kernel.authenticator.authenticate(token);
  request.principal = principal;
  if (access === 'admin' && !isAdmin(principal)) throw commonErrors.forbidden('This endpoint needs an admin role.');
  if (access === 'permission' && !hasPermission(principal.permissions, routeConfig.permission ?? '')) {
    throw commonErrors.forbidden(`The permission ${routeConfig.permission} is required.`);
  }
};

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

const registerOperational = (app: FastifyInstance, kernel: Kernel): void => {
  app.get('/live', { config: { access: 'public' }, schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/ready', { config: { access: 'public' }, schema: { hide: true } }, async (_request, reply) => {
    const reason = kernel.notReadyReason;
    return reason ? reply.code(503).send({ status: 'not_ready', reason }) : { status: 'ready' };
  });
  app.get('/health', { config: { access: 'admin' }, schema: { hide: true } }, async (_request, reply) => {
    const report = await kernel.health.report();
    return reply.code(report.status === 'healthy' ? 200 : report.status === 'degraded' ? 207 : 503).send(report);
  });
};
