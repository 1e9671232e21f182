import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configureEvents } from '../../../commands/events/context';
import type { Kernel } from '../../../infra/kernel';
import { PgLog } from '../../../infra/log/pg-log';
import { silentLogger } from '../../../infra/observability/logger';
import { createPool, type Db } from '../../../infra/postgres/db';
import type { TestDatabase } from '../../support/db';
import { createTestDatabase } from '../../support/db';
import { requireEnv } from '../../support/env';
import type { ApiClient, Body, Receiver, RegisteredModule } from '../../support/events';
import { EVENTS_TEST_ENV, eventually, subscribedModule, startReceiver } from '../../support/events';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import type { TcpProxy } from '../../support/tcp-proxy';
import { startTcpProxy } from '../../support/tcp-proxy';

/**
 * The log unreachable during a batch publish (spec 002: events.broker.unavailable 503, a batch all
 * or nothing). The platform's log is the embedded PostgreSQL log reached through a TCP proxy that
 * the test cuts — the shared servers keep running. (Kafka's brokers advertise their own address, so
 * a proxy cannot stand in front of them; this case runs on the embedded log only.)
 */
describe('a batch publish while the log is down', () => {
  let database: TestDatabase;
  let proxy: TcpProxy;
  let logDb: Db;
  let platform: TestPlatform;
  let receiver: Receiver;
  let crm: RegisteredModule;
  let client: ApiClient;
  const tenantId = randomUUID();

  beforeAll(async () => {
    database = await createTestDatabase('ev');
    const server = new URL(requireEnv('TEST_DATABASE_URL'));
    proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port) });
    const viaProxy = new URL(database.url);
    viaProxy.port = String(proxy.port);
    logDb = createPool(viaProxy.toString(), { max: 4, waitMs: 1000 });
    platform = await startTestPlatform({ role: 'all', services: ['events'], env: EVENTS_TEST_ENV, database });
    // the bus reaches its log through the proxy (before any topic is consumed); the probe is rebuilt on it
    (platform.kernel as { log: Kernel['log'] }).log = new PgLog(logDb, { logger: silentLogger() });
    configureEvents(platform.kernel, { settings: { brokerTimeoutMs: 300 } });
    receiver = await startReceiver();
    ({ module: crm, client: client } = await subscribedModule(platform, {
      prefix: 'brk',
      event: 'order.placed',
      handler: 'orders',
      receiver,
      tenantId,
    }));
  });
  afterAll(async () => {
    await platform?.close();
    await receiver?.close();
    await logDb?.end().catch(() => undefined);
    await proxy?.close();
    await database?.drop();
  });

  it('answers 503 events.broker.unavailable and delivers nothing of it; once the log is back, a retry delivers every event once', async () => {
    const topic = `platform.${crm.slug}.events`;
    const batch = {
      topic,
      events: Array.from({ length: 50 }, (_, i) => ({
        type: `${crm.slug}.order.placed`,
        payload: { i },
        entityId: `order-${i % 7}`,
      })),
    };
    const warmup = await client.call('POST', '/events/publish', {
      topic,
      type: `${crm.slug}.order.placed`,
      payload: { warmup: true },
    });
    await eventually(async () => receiver.received.some((d: Body) => d.event.eventId === warmup.body.eventId));

    await proxy.cut();
    await new Promise((r) => setTimeout(r, 300)); // a successful check is trusted for a quarter of a second
    const refused = await client.call('POST', '/events/publish/batch', batch);
    expect(refused.status).toBe(503);
    expect(refused.body.type).toMatch(/\/events\.broker\.unavailable$/);
    expect(refused.headers.get('retry-after')).toBe('5');
    const staged = await platform.kernel.db.query<{ n: string }>('SELECT count(*) AS n FROM events.outbox');
    expect(Number(staged.rows[0]!.n)).toBe(0);

    await proxy.restore();
    await new Promise((r) => setTimeout(r, 1200)); // the probe remembers a failure for a second
    const accepted = await client.call('POST', '/events/publish/batch', batch);
    expect(accepted.status).toBe(202);
    const ids = new Set(accepted.body.events.map((e: Body) => e.eventId as string));
    await eventually(async () => receiver.received.filter((d: Body) => ids.has(d.event.eventId)).length >= 50, 30_000);
    // deliberately let time pass: no event may be delivered twice (an absence)
    await new Promise((r) => setTimeout(r, 500));
    const batchDeliveries = receiver.received.filter((d: Body) => typeof d.event.payload.i === 'number');
    expect(batchDeliveries).toHaveLength(50);
    expect(new Set(batchDeliveries.map((d: Body) => d.event.eventId)).size).toBe(50);
  });
});
