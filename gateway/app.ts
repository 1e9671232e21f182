import type { FastifyInstance } from 'fastify';
import { createHttpHost, registerHostRoutes } from '../infra/http/host';
import type { Kernel } from '../infra/kernel';
import { apiCallAudit } from './audit';
import { gatewayPrincipal, routeAccess, tokenPrincipal } from './authentication';
import { describeRoutes, registerDocs, registerOpenApi } from './docs';
import { edgeDoor } from './edge';
import { registerPages } from './pages';
import { mountServices } from './services';

export interface AppOptions {
  /** mount the write-api plugins (mutations) */
  write: boolean;
  /** mount the read-api plugins (queries) */
  read: boolean;
  /**
   * the edge's duties: rate limits, strict CORS, X-Tenant-ID stripping, the module check, billing
   * admission, the API-call audit, version headers, the pages mail links open (default true; false
   * for write-api and read-api behind a gateway)
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

/**
 * Builds the HTTP application of a process: the HTTP host every role runs (infra/http/host.ts),
 * the edge's plugins where clients arrive (the all-in-one process and the gateway role), the
 * OpenAPI documents, and the route plugins of the services it serves — run in-process, or
 * forwarded to write-api and read-api in split deployment (docs/gateway.md). The order of
 * registration is the order the hooks run in.
 */
export const buildApp = async (kernel: Kernel, options: AppOptions): Promise<FastifyInstance> => {
  const edge = options.edge ?? true;
  const host = createHttpHost(kernel, { forwardedFor: options.principalFrom === 'gateway' });
  const { app } = host;
  const principalOf = options.principalFrom === 'gateway' ? gatewayPrincipal(kernel) : tokenPrincipal(kernel);
  if (edge) {
    await app.register(edgeDoor(kernel, principalOf));
    await app.register(apiCallAudit(kernel));
  } else {
    await app.register(routeAccess(principalOf));
  }
  await registerOpenApi(app);
  await registerHostRoutes(app, kernel);
  registerDocs(app, kernel.config.rootUrl, kernel.config.API_SNAPSHOT_DIR, describeRoutes(host));
  // the pages identity mail links open by default (APP_URL unset): served where clients arrive
  if (edge) registerPages(app);
  await mountServices(app, kernel, options);
  return app;
};
