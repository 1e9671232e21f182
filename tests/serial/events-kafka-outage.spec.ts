import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireEnv } from '../support/env';
import type { ApiClient, Body, Receiver, RegisteredModule } from '../support/events';
import { EVENTS_TEST_ENV, eventually, subscribedModule, startReceiver } from '../support/events';
import type { TestPlatform } from '../support/platform';
import { startTestPlatform } from '../support/platform';

/**
 * tests/int/events/broker.spec.ts on Kafka: Kafka itself stopped during a batch publish (a proxy
 * cannot stand before Kafka's advertised listener). Stops the shared Kafka: serial project only.
 */
const kafkaCtl = (action: 'stop' | 'start') =>
  execFileSync('bash', [requireEnv('TEST_INFRA_CTL'), 'kafka', action], { stdio: 'ignore', timeout: 120_000 });
let kafkaStopped = false;

describe('a batch publish while Kafka is stopped', () => {
  let platform: TestPlatform;
  let receiver: Receiver;
  let crm: RegisteredModule;
  let client: ApiClient;
  const tenantId = randomUUID();

  beforeAll(async () => {
    platform = await startTestPlatform({
      role: 'all',
      services: ['events'],
      kafka: true,
      env: { ...EVENTS_TEST_ENV, EVENTS_BROKER_TIMEOUT_MS: '1000' },
    });
    receiver = await startReceiver();
    ({ module: crm, client: client } = await subscribedModule(platform, {
      prefix: 'kbrk',
      event: 'order.placed',
      handler: 'orders',
      receiver,
      tenantId,
    }));
  });
  afterAll(async () => {
    if (kafkaStopped) kafkaCtl('start'); // never leave the shared Kafka down, whatever failed
    await platform?.close();
    await receiver?.close();
  });

  it('answers 503 events.broker.unavailable and delivers nothing of it; once Kafka is back, a retry delivers every event once', async () => {
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
    await eventually(async () => receiver.received.some((d: Body) => d.event.eventId === warmup.body.eventId), 60_000);

    kafkaStopped = true;
    kafkaCtl('stop');
    const refused = await client.call('POST', '/events/publish/batch', batch);
    expect(refused.status).toBe(503);
    expect(refused.body.type).toMatch(/\/events\.broker\.unavailable$/);
    expect(
      Number((await platform.kernel.db.query<{ n: string }>('SELECT count(*) AS n FROM events.outbox')).rows[0]!.n),
    ).toBe(0);

    kafkaCtl('start');
    kafkaStopped = false;
    const accepted = await eventually(
      async () => {
        const res = await client.call('POST', '/events/publish/batch', batch);
        return res.status === 202 ? res : null;
      },
      120_000,
      1000,
    );
    const ids = new Set(accepted.body.events.map((e: Body) => e.eventId as string));
    await eventually(
      async () => receiver.received.filter((d: Body) => ids.has(d.event.eventId)).length >= 50,
      180_000,
      500,
    );
    // deliberately let time pass: no event may be delivered twice after the outage (an absence)
    await new Promise((r) => setTimeout(r, 2000));
    const delivered = receiver.received.filter((d: Body) => typeof d.event.payload.i === 'number');
    expect(delivered).toHaveLength(50);
    expect(new Set(delivered.map((d: Body) => d.event.eventId)).size).toBe(50);
  });
});
