import type { FastifyContextConfig, FastifyInstance } from 'fastify';
import type { Kernel } from '../infra/kernel';
import type { RoutePlugin } from '../infra/services';
import { proxyScope } from './proxy';
import { Upstream } from './upstream/client';

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
    undeliveredRetryMs: kernel.config.UPSTREAM_UNDELIVERED_RETRY_MS,
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

/**
 * The services' route plugins under /v1: the write side, the read side, or both — run here, or in
 * split deployment forwarded to write-api and read-api (proxy).
 */
export const mountServices = async (
  app: FastifyInstance,
  kernel: Kernel,
  options: { write: boolean; read: boolean; proxy?: { writeUrl: string; readUrl: string } },
): Promise<void> => {
  const upstreams = options.proxy ? openUpstreams(app, kernel, options.proxy) : null;
  const plugins = [
    ...(options.write ? kernel.services.write.map((p) => ({ plugin: p, upstream: upstreams?.write ?? null })) : []),
    ...(options.read ? kernel.services.read.map((p) => ({ plugin: p, upstream: upstreams?.read ?? null })) : []),
  ];
  for (const { plugin, upstream } of plugins) await app.register(scoped(plugin, kernel, upstream), { prefix: '/v1' });
};
