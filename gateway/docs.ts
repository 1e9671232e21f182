import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { commonErrors } from '../domain/shared/errors';
import type { HttpHost } from '../infra/http/host';
import { PLATFORM_VERSION } from '../infra/kernel';
import { UNLIMITED } from './edge';
import type { RouteDoc } from './openapi';
import { completeOperation, openApiTransform, PROBLEM_SCHEMA } from './openapi';
import { isVersion, registerSnapshots, SNAPSHOT_DIR, snapshotIndex } from './versioning';

/** The namespaces of spec 000 that have an OpenAPI document. */
export const NAMESPACES = ['iam', 'data', 'money', 'files', 'notify', 'audit', 'events', 'billing', 'gateway'] as const;

const packageDir = (name: string): string => dirname(createRequire(import.meta.url).resolve(`${name}/package.json`));
const swaggerUiDir = join(packageDir('@fastify/swagger-ui'), 'static');
/** the reference pages' assets, served from the installed packages (no CDN): swagger-ui, and Redoc's standalone bundle */
const ASSETS: Record<string, { type: string; dir: string }> = {
  'swagger-ui-bundle.js': { type: 'application/javascript', dir: swaggerUiDir },
  'swagger-ui-standalone-preset.js': { type: 'application/javascript', dir: swaggerUiDir },
  'swagger-ui.css': { type: 'text/css', dir: swaggerUiDir },
  'index.css': { type: 'text/css', dir: swaggerUiDir },
  'favicon-32x32.png': { type: 'image/png', dir: swaggerUiDir },
  'redoc.standalone.js': { type: 'application/javascript', dir: join(packageDir('redoc'), 'bundles') },
};

type Operation = Parameters<typeof completeOperation>[0] & { tags?: string[] };
type OpenApiDoc = {
  openapi: string;
  info: Record<string, unknown>;
  paths?: Record<string, Record<string, Operation>>;
  components?: unknown;
  servers?: unknown;
};

/** what the documents need to know of the route behind an operation (method + OpenAPI path) */
export type DescribeRoute = (operationKey: string, path: string) => { route: RouteDoc; rateLimited: boolean } | null;

/** the generator of the documents: registered before any route, so that it sees them all */
export const registerOpenApi = async (app: FastifyInstance): Promise<void> => {
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
};

/** the route behind an operation, as the host registered it, and whether the edge rate-limits its path */
export const describeRoutes =
  (host: HttpHost): DescribeRoute =>
  (key, path) => {
    const route = host.route(key);
    if (!route) return null;
    const c = route.config ?? {};
    const doc: RouteDoc = {
      access: c.access ?? 'bearer',
      namespace: c.namespace,
      idempotency: c.idempotency,
      problems: c.problems,
      hasBody: Boolean(route.schema?.body),
      openapi: c.openapi,
    };
    return { route: doc, rateLimited: !UNLIMITED.has(path) };
  };

/**
 * One OpenAPI 3.1 document per namespace, cut from the document @fastify/swagger generates out of
 * the routes' zod schemas (each route is tagged with its namespace) and completed from the routes'
 * declarations (problem answers, Idempotency-Key: gateway/openapi.ts); a namespace that no
 * installed service serves has no document (404). Two reference pages: swagger-ui at
 * /api-docs/<ns> and Redoc at /api-docs/<ns>/redoc, their assets served from node_modules.
 */
export const registerDocs = (
  app: FastifyInstance & { swagger: () => unknown },
  rootUrl: string,
  snapshotDir: string = SNAPSHOT_DIR,
  describe: DescribeRoute = () => null,
): void => {
  const byNamespace = new Map<string, OpenApiDoc | null>();
  const documentFor = (namespace: string): OpenApiDoc | null => {
    if (byNamespace.has(namespace)) return byNamespace.get(namespace)!;
    // a deep copy: each namespace completes its own operations
    const full = structuredClone(app.swagger()) as OpenApiDoc;
    const paths = Object.fromEntries(
      Object.entries(full.paths ?? {}).flatMap(([path, ops]) => {
        const kept = Object.fromEntries(Object.entries(ops).filter(([, op]) => op.tags?.includes(namespace)));
        for (const [method, op] of Object.entries(kept)) {
          const described = describe(`${method.toUpperCase()} ${path}`, path);
          if (described) completeOperation(op, path, described.route, described.rateLimited);
        }
        return Object.keys(kept).length ? [[path, kept]] : [];
      }),
    );
    const doc =
      Object.keys(paths).length === 0
        ? null
        : { ...full, info: { ...full.info, title: `Platform ${namespace} API` }, servers: [{ url: rootUrl }], paths };
    byNamespace.set(namespace, doc);
    return doc;
  };
  /** the namespace's document, or 404: unknown namespaces and namespaces no installed service serves */
  const served = (ns: string): OpenApiDoc => {
    if (!(NAMESPACES as readonly string[]).includes(ns))
      throw commonErrors.notFound(`There is no API namespace ${ns}.`);
    const doc = documentFor(ns);
    if (!doc) throw commonErrors.notFound(`No installed service serves the API namespace ${ns}.`);
    return doc;
  };

  app.get(
    '/api/v1/:namespace/openapi.json',
    { config: { access: 'public' }, schema: { hide: true } },
    async (request, reply) => {
      const { namespace } = request.params as { namespace: string };
      return reply.type('application/json; charset=utf-8').send(JSON.stringify(served(namespace)));
    },
  );
  app.get(
    '/api-docs/assets/:file',
    { config: { access: 'public' }, schema: { hide: true } },
    async (request, reply) => {
      const { file } = request.params as { file: string };
      const asset = ASSETS[file];
      if (!asset) throw commonErrors.notFound();
      return reply
        .type(asset.type)
        .header('Cache-Control', 'public, max-age=86400')
        .send(await readFile(join(asset.dir, file)));
    },
  );
  app.get(
    '/api-docs/:namespace/redoc',
    { config: { access: 'public' }, schema: { hide: true } },
    async (request, reply) => {
      const { namespace } = request.params as { namespace: string };
      served(namespace);
      return reply.type('text/html; charset=utf-8').send(redocPage(namespace));
    },
  );
  app.get('/api-docs/:namespace', { config: { access: 'public' }, schema: { hide: true } }, async (request, reply) => {
    const { namespace } = request.params as { namespace: string };
    if (isVersion(namespace)) {
      // a deprecated version: its immutable OpenAPI snapshots (docs/api-snapshots/v{N}/)
      const documents = await snapshotIndex(namespace, snapshotDir);
      if (!documents) throw commonErrors.notFound(`There is no snapshot of API version ${namespace}.`);
      if (request.headers.accept?.includes('application/json')) return { version: namespace, documents };
      return reply.type('text/html; charset=utf-8').send(snapshotPage(namespace, documents));
    }
    served(namespace);
    return reply.type('text/html; charset=utf-8').send(referencePage(namespace));
  });
  registerSnapshots(app, snapshotDir);
};

const snapshotPage = (version: string, documents: { namespace: string; url: string }[]): string => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Platform API ${version} (deprecated)</title>
<link rel="stylesheet" href="/api-docs/assets/swagger-ui.css"><link rel="stylesheet" href="/api-docs/assets/index.css"><link rel="icon" href="/api-docs/assets/favicon-32x32.png"></head>
<body><div id="swagger-ui"></div>
<script src="/api-docs/assets/swagger-ui-bundle.js"></script>
<script src="/api-docs/assets/swagger-ui-standalone-preset.js"></script>
<script>window.ui = SwaggerUIBundle({ urls: ${JSON.stringify(documents.map((d) => ({ url: d.url, name: `${version} ${d.namespace}` })))}, dom_id: '#swagger-ui',
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: 'StandaloneLayout' });</script>
</body></html>`;

const referencePage = (namespace: string): string => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Platform ${namespace} API</title>
<link rel="stylesheet" href="/api-docs/assets/swagger-ui.css"><link rel="stylesheet" href="/api-docs/assets/index.css"><link rel="icon" href="/api-docs/assets/favicon-32x32.png"></head>
<body><div id="swagger-ui"></div>
<script src="/api-docs/assets/swagger-ui-bundle.js"></script>
<script src="/api-docs/assets/swagger-ui-standalone-preset.js"></script>
<script>window.ui = SwaggerUIBundle({ url: '/api/v1/${namespace}/openapi.json', dom_id: '#swagger-ui', deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: 'StandaloneLayout' });</script>
</body></html>`;

const redocPage = (namespace: string): string => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Platform ${namespace} API</title>
<link rel="icon" href="/api-docs/assets/favicon-32x32.png"><style>body { margin: 0; padding: 0; }</style></head>
<body><redoc spec-url="/api/v1/${namespace}/openapi.json"></redoc>
<script src="/api-docs/assets/redoc.standalone.js"></script>
</body></html>`;
