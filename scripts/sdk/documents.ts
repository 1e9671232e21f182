import { loadServices } from '../../app/services';
import { buildApp } from '../../gateway/app';
import { NAMESPACES } from '../../gateway/docs';
import { loadConfig } from '../../infra/config';
import type { Engines, KernelParts } from '../../infra/kernel';
import { Kernel } from '../../infra/kernel';
import { silentLogger } from '../../infra/observability/logger';
import { PlatformSecrets } from '../../infra/secrets';

export type Namespace = (typeof NAMESPACES)[number];
export type OpenApiDocument = Record<string, unknown> & { paths: Record<string, unknown> };

/** the configuration the documents are built with: the defaults, never the caller's environment */
const DOCUMENT_ENV = { PLATFORM_ENV: 'development', ROOT_URL: 'http://127.0.0.1:8080' };

/** an engine the documents must not need: any use is a bug of this builder, named in the error */
const absent = <T extends object>(name: string): T =>
  new Proxy({} as T, {
    get: (_target, property) => {
      if (property === 'then') return undefined; // not a promise
      throw new Error(`building the OpenAPI documents used ${name}.${String(property)}: they must need no engine`);
    },
  });

/**
 * The OpenAPI document of every namespace, as GET /api/v1/<namespace>/openapi.json of a platform
 * with every service answers it, built in this process without any engine: the application every
 * process serves (gateway/app.ts) is built on a kernel whose engines are absent, marked ready, and
 * asked for each document through Fastify's inject — the very route and code the gateway serves.
 * A namespace no service serves (404) has no document.
 */
export const platformDocuments = async (): Promise<Map<Namespace, OpenApiDocument>> => {
  const engines: Engines = {
    cache: absent('cache'),
    mail: absent('mail'),
    objects: absent('objects'),
    analytics: () => Promise.reject(new Error('building the OpenAPI documents opened ClickHouse')),
    scanner: null,
    // route plugins derive keys while registering (local presigned links): any fixed master will do
    secrets: new PlatformSecrets(Buffer.alloc(32)),
  };
  const parts: KernelParts = {
    config: loadConfig(DOCUMENT_ENV),
    logger: silentLogger(),
    db: absent('db'),
    log: absent('log'),
    engines,
    services: await loadServices(),
  };
  const kernel = new Kernel(parts);
  Object.assign(kernel.readiness, { migrations: true, log: true, projections: true });
  const app = await buildApp(kernel, { write: true, read: true });
  try {
    await app.ready();
    const documents = new Map<Namespace, OpenApiDocument>();
    for (const namespace of NAMESPACES) {
      const res = await app.inject({ method: 'GET', url: `/api/v1/${namespace}/openapi.json` });
      if (res.statusCode === 404) continue;
      if (res.statusCode !== 200) throw new Error(`the ${namespace} document: ${res.statusCode} ${res.body}`);
      documents.set(namespace, JSON.parse(res.body) as OpenApiDocument);
    }
    return documents;
  } finally {
    await app.close();
    await kernel.close();
  }
};
