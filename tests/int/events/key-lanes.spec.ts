import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerEventHandler } from '../../../commands/events/context';
import { createInProcessSubscription } from '../../../commands/events/subscriptions';
import type { EventView } from '../../../domain/events/views';
import { partitionForKey } from '../../../infra/log/murmur2';
import type { TestDatabase } from '../../support/db';
import { createTestDatabase } from '../../support/db';
import {
  EVENTS_TEST_ENV,
  eventually,
  moduleClient,
  registerModule,
  uniqueSlug,
  userClient,
} from '../../support/events';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import type { ServiceProcess } from '../../support/service-process';
import { startServiceProcess } from '../../support/service-process';

/**
 * Delivery by entity key (issue 25; spec 002: ordering per entity only): events of different keys in
 * one partition are handed over concurrently, each key's strictly in order; a slow or failing key
 * holds back its own later events only; the cursor commits only what is finished, so a crash
 * delivers again rather than loses. In-process handlers (the platform's process) and one webhook
 * run against a server process that is killed.
 */
const PARTITIONS = 3; // KAFKA_PARTITIONS' default: the embedded log places keys as Kafka does
const TOPIC = 'platform.app.events';

/** n keys with the prefix that land on one partition */
const keysOnOnePartition = (prefix: string, n: number): string[] => {
  const keys: string[] = [];
  for (let i = 0; keys.length < n; i += 1) {
    const key = `${prefix}-${i}`;
    if (partitionForKey(key, PARTITIONS) === 0) keys.push(key);
  }
  return keys;
};

const gate = () => {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
};

describe('delivery by entity key, in process', () => {
  let platform: TestPlatform;
  const tenant = randomUUID();
  const handled: { key: string; n: number; attempt: number }[] = [];
  /** per test: what the handler does before it answers */
  let behaviour: (event: EventView, attempt: number) => Promise<void> = async () => undefined;
  let inFlight = 0;
  let mostInFlight = 0;
  const slowGate = gate();

  beforeAll(async () => {
    platform = await startTestPlatform({ role: 'all', services: ['events'], env: EVENTS_TEST_ENV });
    registerEventHandler(platform.kernel, 'lanes', async (event, ctx) => {
      inFlight += 1;
      mostInFlight = Math.max(mostInFlight, inFlight);
      try {
        await behaviour(event, ctx.attempt);
        handled.push({ key: event.entityId, n: event.payload.n as number, attempt: ctx.attempt });
      } finally {
        inFlight -= 1;
      }
    });
    const meta = { tenantId: tenant, actorId: 'billing', traceId: null, correlationId: null, causationId: null };
    await platform.kernel.commands.run(meta, (uow) =>
      createInProcessSubscription(platform.kernel, uow, 'billing', {
        topic: TOPIC,
        consumerGroup: 'billing.lanes',
        handlerName: 'lanes',
      }),
    );
  });
  afterAll(async () => {
    slowGate.open();
    await platform?.close();
  });

  const publish = async (events: { key: string; n: number; extra?: Record<string, unknown> }[]) => {
    const res = await userClient(platform, tenant).call('POST', '/events/publish/batch', {
      topic: TOPIC,
      events: events.map((e) => ({ type: 'app.item.changed', entityId: e.key, payload: { n: e.n, ...e.extra } })),
    });
    expect(res.status).toBe(202);
  };
  const of = (key: string) => handled.filter((h) => h.key === key).map((h) => h.n);

  it('given 8 keys of one partition, some slow and one failing twice: each key in order, several keys at once', async () => {
    const keys = keysOnOnePartition(`order-${randomUUID().slice(0, 8)}`, 8);
    const failing = keys[7]!;
    behaviour = async (event, attempt) => {
      const key = event.entityId;
      if (keys.indexOf(key) < 4) await new Promise((r) => setTimeout(r, 5 + Math.floor(Math.random() * 15)));
      if (key === failing && event.payload.n === 3 && attempt < 3) throw new Error('not yet');
    };
    mostInFlight = 0;
    // interleaved: key 0's first, key 1's first, …, key 0's second, …
    await publish(Array.from({ length: 12 * 8 }, (_, i) => ({ key: keys[i % 8]!, n: Math.floor(i / 8) })));
    await eventually(async () => keys.every((k) => of(k).length >= 12), 60_000);
    for (const key of keys) expect(of(key)).toEqual(Array.from({ length: 12 }, (_, n) => n));
    expect(handled.find((h) => h.key === failing && h.n === 3)!.attempt).toBe(3);
    // one partition, yet more than one key's handler ran at a time
    expect(mostInFlight).toBeGreaterThan(1);
  });

  it("given a key whose handler hangs: other keys of its partition go on, and the key's next event waits for it", async () => {
    const [slow, ...fast] = keysOnOnePartition(`slow-${randomUUID().slice(0, 8)}`, 4) as [string, ...string[]];
    behaviour = async (event) => {
      if (event.entityId === slow && event.payload.n === 0) await slowGate.opened;
    };
    await publish([{ key: slow, n: 0 }]);
    await eventually(async () => inFlight === 1);
    await publish([...fast.flatMap((key) => [0, 1, 2].map((n) => ({ key, n }))), { key: slow, n: 1 }]);
    // the slow key's first event is still in its handler
    await eventually(async () => fast.every((k) => of(k).length === 3), 30_000);
    for (const key of fast) expect(of(key)).toEqual([0, 1, 2]);
    expect(of(slow)).toEqual([]);
    slowGate.open();
    await eventually(async () => of(slow).length === 2);
    expect(of(slow)).toEqual([0, 1]);
  });
});

describe('delivery by entity key, the server killed (SIGKILL) in the middle of a turn', () => {
  let database: TestDatabase;
  let server: ServiceProcess | null = null;
  const received: { key: string; n: number; life: number }[] = [];
  let life = 1;
  const hang = gate();
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const { event } = JSON.parse(Buffer.concat(chunks).toString()) as { event: EventView };
      const key = event.entityId;
      const n = event.payload.n as number;
      // in the first life, one key's event never gets an answer: the turn is mid-flight when the kill lands
      if (life === 1 && key.endsWith('-hang') && n === 2) {
        void hang.opened.then(() => res.destroy());
        return;
      }
      received.push({ key, n, life });
      res.writeHead(204).end();
    });
  });

  beforeAll(async () => {
    database = await createTestDatabase('bus_crash');
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    server?.child.kill('SIGKILL');
    hang.open();
    receiver.closeAllConnections();
    await new Promise((r) => receiver.close(r));
    await database?.drop();
  });

  it('delivers every event after the restart, each key in order from where it stood', async () => {
    const env = { DATABASE_URL: database.url, ...EVENTS_TEST_ENV };
    server = await startServiceProcess('events', env);
    const platform = { url: server.url, kernel: { db: database.db } };
    const tenant = randomUUID();
    const slug = uniqueSlug('crash');
    const topic = `platform.${slug}.events`;
    const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/events`;
    const mod = await registerModule(
      platform,
      { slug, version: '1.0.0', events: { publishes: [`${slug}.item.changed`], subscribes: [topic], endpoint } },
      [tenant],
    );
    const client = moduleClient(platform, mod, tenant);
    const sub = await client.call('POST', '/events/subscriptions', {
      topic,
      consumerGroup: `${slug}.crash`,
      handlerName: 'crash',
    });
    expect(sub.status).toBe(201);
    const keys = [...Array.from({ length: 9 }, (_, i) => `k${i}-${slug}`), `k9-${slug}-hang`];
    const res = await client.call('POST', '/events/publish/batch', {
      topic,
      events: Array.from({ length: 20 * 10 }, (_, i) => ({
        type: `${slug}.item.changed`,
        entityId: keys[i % 10],
        payload: { n: Math.floor(i / 10) },
      })),
    });
    expect(res.status).toBe(202);
    await eventually(async () => received.length >= 60, 60_000);
    server.child.kill('SIGKILL');
    await new Promise((r) => server!.child.once('exit', r));
    life = 2;
    hang.open();

    server = await startServiceProcess('events', env);
    await eventually(
      async () => keys.every((k) => new Set(received.filter((r) => r.key === k).map((r) => r.n)).size === 20),
      60_000,
    );
    for (const key of keys) {
      const mine = received.filter((r) => r.key === key);
      // nothing lost, and each life delivered the key's events in order (the second from where the first stood)
      expect([...new Set(mine.map((r) => r.n))].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, n) => n));
      for (const l of [1, 2]) {
        const seq = mine.filter((r) => r.life === l).map((r) => r.n);
        expect(seq).toEqual([...seq].sort((a, b) => a - b));
      }
    }
    // the kill landed before the hanging key's event was answered
    expect(received.some((r) => r.key.endsWith('-hang') && r.n === 2 && r.life === 1)).toBe(false);
  });
});
