import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import protobuf from 'protobufjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformEvent } from '../../../domain/shared/envelope';
import type { ApiClient, Body, RegisteredModule } from '../../support/events';
import {
  EVENTS_TEST_ENV,
  eventually,
  moduleClient,
  registerModule,
  uniqueSlug,
  userClient,
} from '../../support/events';
import type { MoneyClient } from '../../support/money';
import { moneyClient } from '../../support/money';
import { notifyClient, seedMember } from '../../support/notify';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import { openSession } from '../../support/socket-client';
import { testToken } from '../../support/auth';

/**
 * One event envelope on the log (issue 23): every record of the platform's topics is the spec's
 * Event (spec 002: eventId, type, source, tenantId, traceId, timestamp, schemaVersion, payload),
 * money's amounts are integers and meta is an object; a module subscribed to
 * platform.money.events receives it through its signed webhook; each platform topic serves the
 * schema of what it carries; the socket replays for a client that names no last message.
 */
const EVENT_FIELDS = ['eventId', 'type', 'source', 'tenantId', 'traceId', 'timestamp', 'schemaVersion', 'payload'];

/** a module's webhook endpoint on loopback that keeps each delivery's raw bytes and headers */
interface Delivery {
  raw: string;
  body: Body;
  headers: Record<string, string | string[] | undefined>;
}
const startRawReceiver = async () => {
  const received: Delivery[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString();
      received.push({ raw, body: JSON.parse(raw), headers: req.headers });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/money`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};

/** the bus's signature as README documents it: t=<unix s>,v1=<hex HMAC-SHA256(webhook secret, "<t>.<body>")> */
const signatureHolds = (header: string, secret: string, raw: string): boolean => {
  const parts = Object.fromEntries(header.split(',').map((p) => p.split('=') as [string, string]));
  if (!parts.t || !parts.v1) return false;
  const expected = createHmac('sha256', secret).update(`${parts.t}.${raw}`).digest();
  const given = Buffer.from(parts.v1, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
};

describe('the platform topics carry the spec’s Event', () => {
  let platform: TestPlatform;
  let receiver: Awaited<ReturnType<typeof startRawReceiver>>;
  let ledger: RegisteredModule;
  let ledgerA: ApiClient;
  let moneyA: MoneyClient;
  let moneyB: MoneyClient;
  const tenantA = randomUUID();
  const tenantB = randomUUID();
  const startedAt = Date.now();

  beforeAll(async () => {
    platform = await startTestPlatform({ services: ['money', 'events', 'notify'], kafka: true, env: EVENTS_TEST_ENV });
    receiver = await startRawReceiver();
    const slug = uniqueSlug('ledger');
    ledger = await registerModule(
      platform,
      {
        slug,
        version: '1.0.0',
        events: { publishes: [], subscribes: ['platform.money.events'], endpoint: receiver.url },
      },
      [tenantA, tenantB],
    );
    ledgerA = moduleClient(platform, ledger, tenantA);
    const sub = await ledgerA.call('POST', '/events/subscriptions', {
      topic: 'platform.money.events',
      consumerGroup: `${slug}.payments`,
      handlerName: 'payments',
    });
    expect(sub.status, JSON.stringify(sub.body)).toBe(201);
    moneyA = moneyClient(platform.url, tenantA, 'u-admin', { members: platform.kernel.db });
    moneyB = moneyClient(platform.url, tenantB, 'u-admin', { members: platform.kernel.db });
  });
  afterAll(async () => {
    await platform?.close();
    await receiver?.close();
  });

  it('delivers a money credit to the subscribed module as the Event: integer amounts, meta an object, signed', async () => {
    // given a wallet of tenant A, and one of tenant B (whose events the subscription of A never sees)
    const wallet = await moneyA.openWallet('u-payer');
    const other = await moneyB.openWallet('u-payer');
    // when both are credited
    const credit = await moneyA.post(`/wallets/${wallet}/credit`, {
      amount: 1250,
      currency: 'USD',
      reason: 'top-up',
      meta: { orderId: 'o-1', lines: [1, 2] },
    });
    expect(credit.status, credit.text).toBe(200);
    expect((await moneyB.post(`/wallets/${other}/credit`, { amount: 7, currency: 'USD' })).status).toBe(200);

    // then the module's webhook receives tenant A's credit, spec-shaped
    const got = await eventually(async () =>
      receiver.received.find((d) => d.body.event?.type === 'money.wallet.credited'),
    );
    const event = got.body.event;
    expect(got.body).toMatchObject({ consumerGroup: `${ledger.slug}.payments`, handlerName: 'payments', attempt: 1 });
    expect(Object.keys(event).sort()).toEqual([...EVENT_FIELDS, 'entityId'].sort());
    expect(event).toMatchObject({
      type: 'money.wallet.credited',
      source: 'money',
      tenantId: tenantA,
      schemaVersion: '1.0.0',
      entityId: wallet,
      payload: {
        walletId: wallet,
        transactionId: credit.body.id,
        amount: 1250,
        currency: 'USD',
        reason: 'top-up',
        meta: { orderId: 'o-1', lines: [1, 2] },
        balanceAfter: { available: 1250, pending: 0, frozen: 0 },
      },
    });
    expect(event.schemaVersion).toMatch(/^\d+\.\d+\.\d+$/);
    expect(event.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(Number.isNaN(Date.parse(event.timestamp))).toBe(false);
    for (const entry of event.payload.entries as Body[]) expect(Number.isInteger(entry.amount)).toBe(true);
    // the amount is a JSON integer on the wire, not a string
    expect(got.raw).toContain('"amount":1250');
    // and the delivery is signed as the bus documents it, with the module's webhook secret
    expect(got.headers['x-event-id']).toBe(event.eventId);
    const signature = String(got.headers['x-platform-signature']);
    expect(signatureHolds(signature, ledger.webhookSecret, got.raw)).toBe(true);
    expect(signatureHolds(signature, `${ledger.webhookSecret}x`, got.raw)).toBe(false);
    // tenant B's credit never reaches tenant A's subscription
    expect(receiver.received.every((d) => d.body.event.tenantId === tenantA)).toBe(true);
  });

  it('puts nothing on platform.money.events and platform.audit.events but the Event', async () => {
    const log = platform.kernel.log;
    const values: { topic: string; value: Body }[] = [];
    for (const topic of ['platform.money.events', 'platform.audit.events']) {
      const from = await log.offsetsForTime(topic, startedAt);
      for (let p = 0; p < (await log.partitionsOf(topic)); p += 1) {
        for (let offset = from[p] ?? 0; ;) {
          const records = await log.read(topic, p, offset, 1000);
          if (records.length === 0) break;
          for (const r of records) values.push({ topic, value: JSON.parse(r.value) });
          offset = records[records.length - 1]!.offset + 1;
        }
      }
    }
    const mine = values.filter((v) => v.value.tenantId === tenantA);
    expect(mine.filter((v) => v.topic === 'platform.money.events').map((v) => v.value.type)).toEqual(
      expect.arrayContaining(['money.wallet.opened', 'money.wallet.credited']),
    );
    for (const { topic, value } of values.filter((v) => v.value.tenantId === tenantA || v.value.tenantId === tenantB)) {
      expect(Object.keys(value), `${topic} ${value.type}`).toEqual(EVENT_FIELDS);
      expect(PlatformEvent.safeParse(value).success, `${topic} ${value.type}`).toBe(true);
    }
    const credited = mine.find((v) => v.value.type === 'money.wallet.credited')!.value;
    expect(typeof credited.payload.amount).toBe('number');
    expect(typeof credited.payload.meta).toBe('object');
  });

  it("serves each platform topic's schema derived from what its service publishes", async () => {
    const user = userClient(platform, tenantA);
    const money = await user.call('GET', '/events/topics/platform.money.events/schema');
    expect(money.status).toBe(200);
    expect(money.body).toMatchObject({ topic: 'platform.money.events', schemaVersion: '1.0.0' });
    const text = money.body.protoDefinition as string;
    // it parses, and names the payload of every money event with its typed fields
    const root = protobuf.parse(text, { keepCase: true }).root;
    const credited = root.lookupType('platform.money.events.MoneyWalletCredited');
    expect(credited.fields.amount!.type).toBe('int64');
    expect(credited.fields.meta!.type).toBe('google.protobuf.Struct');
    expect(credited.fields.balance_after).toBeDefined();
    for (const type of ['MoneyWalletDebited', 'MoneyWalletTransfer', 'MoneyHoldExpired', 'Event'])
      expect(() => root.lookupType(`platform.money.events.${type}`)).not.toThrow();
    const files = await user.call('GET', '/events/topics/platform.files.events/schema');
    expect(files.body.protoDefinition).toContain('message FilesFileUploaded');
    expect(files.body.protoDefinition).toMatch(/int64 size_bytes = \d+;/);
  });
});

describe('the real-time socket of a client that names no last message', () => {
  let platform: TestPlatform;
  const tenantId = randomUUID();

  beforeAll(async () => {
    platform = await startTestPlatform({ services: ['notify'] });
  });
  afterAll(async () => platform?.close());

  it('replays the messages of the last hour (spec 002: up to 100 from the buffer), then goes live', async () => {
    // given two notifications delivered to a user while no socket of theirs was open
    await seedMember(platform.kernel.db, tenantId, 'u-away');
    const sender = notifyClient(platform.url, tenantId);
    const ids: string[] = [];
    for (const subject of ['first', 'second']) {
      const res = await sender.post('/notify', {
        channel: 'websocket',
        recipient: { userId: 'u-away' },
        subject,
        body: `body of ${subject}`,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      ids.push(res.body.notificationId as string);
    }
    await eventually(async () => {
      const { rows } = await platform.kernel.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM notify.socket_buffer WHERE tenant_id = $1 AND notification_id = ANY($2::uuid[])`,
        [tenantId, ids],
      );
      return rows[0]!.n === ids.length;
    });
    // when the user connects with no last_notification_id
    const client = await openSession(platform.url, testToken(tenantId, 'u-away', []));
    try {
      // then both are replayed, oldest first, marked as replays, before ready
      expect(client.notifications().map((m) => m.notification_id)).toEqual(ids);
      expect(client.notifications().every((m) => m.replay === true)).toBe(true);
      expect(client.messages.at(-1)).toEqual({ type: 'ready', user_id: 'u-away', replayed: 2 });
      // and another user of the tenant gets none of them
      const bystander = await openSession(platform.url, testToken(tenantId, 'u-bystander', []));
      expect(bystander.messages).toEqual([{ type: 'ready', user_id: 'u-bystander', replayed: 0 }]);
      await bystander.close();
    } finally {
      await client.close();
    }
  });
});
