import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { commonErrors } from '../domain/shared/errors';
import { isVersion, registerSnapshots, SNAPSHOT_DIR, snapshotIndex } from './versioning';

/** The namespaces of spec 000 that have an OpenAPI document. */
export const NAMESPACES = ['iam', 'data', 'money', 'files', 'notify', 'audit', 'events', 'billing', 'gateway'] as const;

const swaggerUiDir = join(dirname(createRequire(import.meta.url).resolve('@fastify/swagger-ui/package.json')), 'static');
const ASSETS: Record<string, string> = {
  'swagger-ui-bundle.js': 'application/javascript', 'swagger-ui-standalone-preset.js': 'application/javascript',
  'index.css': 'text/css', 'favicon-32x32.png': 'image/png',
};

type OpenApiDoc = { openapi: string; info: Record<string, unknown>; paths?: Record<string, Record<string, { tags?: string[] }>>; components?: unknown; servers?: unknown };

/**
 * One OpenAPI 3.1 document per namespace, cut from the document @fastify/swagger generates out of
 * the routes' zod schemas (each route is tagged with its namespace), plus an interactive
 * reference page whose assets are served from the installed swagger-ui (no CDN).
 */
export const registerDocs = (app: FastifyInstance & { swagger: () => unknown }, rootUrl: string, snapshotDir = SNAPSHOT_DIR): void => {
  const byNamespace = new Map<string, OpenApiDoc>();
  const documentFor = (namespace: string): OpenApiDoc => {
    const cached = byNamespace.get(namespace);
    if (cached) return cached;
    const full = app.swagger() as OpenApiDoc;
    const paths = Object.fromEntries(Object.entries(full.paths ?? {}).flatMap(([path, ops]) => {
      const kept = Object.fromEntries(Object.entries(ops).filter(([, op]) => op.tags?.includes(namespace)));
      return Object.keys(kept).length ? [[path, kept]] : [];
    }));
    const doc = { ...full, info: { ...full.info, title: `Platform ${namespace} API` }, servers: [{ url: rootUrl }], paths };
    byNamespace.set(namespace, doc);
    return doc;
  };
  const known = (ns: string) => {
    if (!(NAMESPACES as readonly string[]).includes(ns)) throw commonErrors.notFound(`There is no API namespace ${ns}.`);
  };

  app.get('/api/v1/:namespace/openapi.json', { config: { access: 'public' }, schema: { hide: true } }, async (request) => {
    const { namespace } = request.params as { namespace: string };
    known(namespace);
    return documentFor(namespace);
  });
  app.get('/api-docs/assets/:file', { config: { access: 'public' }, schema: { hide: true } }, async (request, reply) => {
    const { file } = request.params as { file: string };
    const type = ASSETS[file];
    if (!type) throw commonErrors.notFound();
    return reply.type(type).header('Cache-Control', 'public, max-age=86400').send(await readFile(join(swaggerUiDir, file)));
  });
  app.get('/api-docs/:namespace', { config: { access: 'public' }, schema: { hide: true } }, async (request, reply) => {
    const { namespace } = request.params as { namespace: string };
    if (isVersion(namespace)) {
      // a deprecated version: its immutable OpenAPI snapshots (docs/api-snapshots/v{N}/)
      const documents = await snapshotIndex(namespace, snapshotDir);
      if (!documents) throw commonErrors.notFound(`There is no snapshot of API version ${namespace}.`);
      if (request.headers.accept?.includes('application/json')) return { version: namespace, documents };
      return reply.type('text/html; charset=utf-8').send(snapshotPage(namespace, documents));
    }
    known(namespace);
    return reply.type('text/html; charset=utf-8').send(referencePage(namespace));
  });
  registerSnapshots(app, snapshotDir);
};

const snapshotPage = (version: string, documents: { namespace: string; url: string }[]): string => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Platform API ${version} (deprecated)</title>
<link rel="stylesheet" href="/api-docs/assets/index.css"><link rel="icon" href="/api-docs/assets/favicon-32x32.png"></head>
<body><div id="swagger-ui"></div>
<script src="/api-docs/assets/swagger-ui-bundle.js"></script>
<script src="/api-docs/assets/swagger-ui-standalone-preset.js"></script>
<script>window.ui = SwaggerUIBundle({ urls: ${JSON.stringify(documents.map((d) => ({ url: d.url, name: `${version} ${d.namespace}` })))}, dom_id: '#swagger-ui',
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: 'StandaloneLayout' });</script>
</body></html>`;

const referencePage = (namespace: string): string => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Platform ${namespace} API</title>
<link rel="stylesheet" href="/api-docs/assets/index.css"><link rel="icon" href="/api-docs/assets/favicon-32x32.png"></head>
<body><div id="swagger-ui"></div>
<script src="/api-docs/assets/swagger-ui-bundle.js"></script>
<script src="/api-docs/assets/swagger-ui-standalone-preset.js"></script>
<script>window.ui = SwaggerUIBundle({ url: '/api/v1/${namespace}/openapi.json', dom_id: '#swagger-ui', deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: 'StandaloneLayout' });</script>
</body></html>`;
