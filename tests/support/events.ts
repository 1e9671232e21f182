import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { recordInstallation } from '../../commands/modules/installations';
import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { ServiceParts } from '../../infra/services';
import { mergeServiceParts } from '../../infra/services';
import eventsProjections from '../../projections/events';
import modulesProjections from '../../projections/modules';
import eventsRead from '../../read-api/events';
import modulesRead from '../../read-api/modules';
import eventsWorkers from '../../workers/events';
import eventsWrite from '../../write-api/events';
import modulesWrite from '../../write-api/modules';
import { testToken } from './auth';
import type { Queryable } from '../../infra/postgres/db';

/** what the helpers below need of a platform: its URL, and its database for the set-up */
export interface PlatformHandle {
  url: string;
  kernel: { db: Queryable };
}
import { pollUntil } from './poll';

/** the module registry and the bus, as discovery would find them */
export const eventsServices: ServiceParts = mergeServiceParts({
  write: [modulesWrite, eventsWrite],
  read: [modulesRead, eventsRead],
  projections: [...modulesProjections.projections, ...eventsProjections.projections],
  workers: [eventsWorkers],
});

/** fast retries and polls, so that three failed attempts take a fraction of a second */
export const EVENTS_TEST_ENV = {
  EVENTS_RETRY_BACKOFF_MS: '30',
  EVENTS_POLL_INTERVAL_MS: '30',
  EVENTS_TASK_POLL_INTERVAL_MS: '30',
  EVENTS_TASK_BACKOFF_MS: '30',
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
export type Body = any;

export interface ApiClient {
  token: string;
  call(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: Body; headers: Headers }>;
}

export const apiClient = (baseUrl: string, token: string, extraHeaders: Record<string, string> = {}): ApiClient => ({
  token,
  async call(method, path, body, headers = {}) {
    const res = await fetch(`${baseUrl}/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...extraHeaders,
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      /* not JSON */
    }
    return { status: res.status, body: parsed, headers: res.headers };
  },
});

export const ownerClient = (p: Pick<PlatformHandle, 'url'>): ApiClient =>
  apiClient(p.url, testToken(PLATFORM_TENANT_ID, 'platform-owner', ['platform.*']));
export const userClient = (
  p: Pick<PlatformHandle, 'url'>,
  tenantId: string,
  permissions = ['events.publish', 'events.subscribe', 'events.manage'],
): ApiClient => apiClient(p.url, testToken(tenantId, `user-${tenantId.slice(0, 8)}`, permissions));

/** a webhook endpoint that records what it receives and fails while told to */
export interface Receiver {
  url: string;
  received: Body[];
  /** answers 500 to events whose payload's `fail` is true while this is true */
  failMarked: boolean;
  /** how long the handler takes before it answers (a module's handler doing its own I/O); 0 by default */
  delayMs: number;
  close(): Promise<void>;
}

export const startReceiver = async (): Promise<Receiver> => {
  const receiver: Receiver = { url: '', received: [], failMarked: true, delayMs: 0, close: async () => undefined };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString());
      if (receiver.failMarked && body.event?.payload?.fail === true) {
        res.writeHead(500).end('handler failed on purpose');
        return;
      }
      receiver.received.push({
        ...body,
        signature: req.headers['x-platform-signature'],
        traceparent: req.headers.traceparent,
        at: Date.now(),
      });
      if (receiver.delayMs > 0) setTimeout(() => res.writeHead(204).end(), receiver.delayMs);
      else res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
};

export interface RegisteredModule {
  id: string;
  slug: string;
  key: string;
  webhookSecret: string;
}

/** registers a module through the API (platform owner) and installs it for the tenants given */
export const registerModule = async (
  p: PlatformHandle,
  manifest: Record<string, unknown>,
  tenants: string[],
): Promise<RegisteredModule> => {
  const res = await ownerClient(p).call('POST', '/modules', manifest);
  if (res.status !== 201) throw new Error(`module registration answered ${res.status}: ${JSON.stringify(res.body)}`);
  for (const tenantId of tenants)
    await recordInstallation(p.kernel.db, res.body.id as string, tenantId, 'active', new Date());
  return {
    id: res.body.id as string,
    slug: res.body.slug as string,
    key: res.body.credentials.key as string,
    webhookSecret: res.body.credentials.webhookSecret as string,
  };
};

/** a module's client acting for one tenant */
export const moduleClient = (p: Pick<PlatformHandle, 'url'>, module: RegisteredModule, tenantId: string): ApiClient =>
  apiClient(p.url, module.key, { 'x-module-tenant': tenantId });

export const eventually = async <T>(
  probe: () => Promise<T | null | undefined | false>,
  timeoutMs = 20_000,
  stepMs = 50,
): Promise<T> => (await pollUntil(probe, Boolean, { timeoutMs, everyMs: stepMs })) as T;

let counter = 0;
export const uniqueSlug = (prefix = 'mod'): string =>
  `${prefix}_${process.pid.toString(36)}${Date.now().toString(36)}${(counter += 1)}`.slice(0, 32);

/**
 * A module registered for one tenant that publishes one event type on its own topic and is
 * subscribed to that topic with its webhook at `receiver`: the set-up of the delivery suites.
 */
export const subscribedModule = async (
  p: PlatformHandle,
  o: { prefix: string; event: string; handler: string; receiver: Receiver; tenantId: string },
): Promise<{ module: RegisteredModule; client: ApiClient; topic: string; type: string; subscriptionId: string }> => {
  const slug = uniqueSlug(o.prefix);
  const topic = `platform.${slug}.events`;
  const type = `${slug}.${o.event}`;
  const module = await registerModule(
    p,
    { slug, version: '1.0.0', events: { publishes: [type], subscribes: [topic], endpoint: o.receiver.url } },
    [o.tenantId],
  );
  const client = moduleClient(p, module, o.tenantId);
  const res = await client.call('POST', '/events/subscriptions', {
    topic,
    consumerGroup: `${slug}.${o.handler}`,
    handlerName: o.handler,
  });
  if (res.status !== 201) throw new Error(`subscription answered ${res.status}: ${JSON.stringify(res.body)}`);
  return { module, client, topic, type, subscriptionId: res.body.id as string };
};
