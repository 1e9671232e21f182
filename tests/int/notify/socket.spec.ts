import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configureNotify } from '../../../commands/notify/context';
import { testToken } from '../../support/auth';
import type { TestDatabase } from '../../support/db';
import { createTestDatabase } from '../../support/db';
import { requireEnv } from '../../support/env';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import { eventually, notifyClient, notifyHttpServices, notifyServices, seedMember } from '../../support/notify';
import type { SocketClient } from '../../support/socket-client';
import { connectSocket, openSession } from '../../support/socket-client';

/**
 * The real-time socket across processes: a client on one server process receives what another
 * process delivers (fan-out through Redis, or PostgreSQL LISTEN/NOTIFY without it), and after a
 * reconnect — to the other process — gets exactly what it missed, in order, once.
 */
const fast = (p: TestPlatform) =>
  configureNotify(p.kernel, { settings: { pollIntervalMs: 20, ratePerTenant: 10_000 } });

const sendTo = async (
  via: TestPlatform,
  tenantId: string,
  userId: string,
  subjects: string[],
  db = via.database.db,
): Promise<string[]> => {
  await seedMember(db, tenantId, userId);
  const c = notifyClient(via.url, tenantId);
  const ids: string[] = [];
  for (const subject of subjects) {
    const res = await c.post('/notify', {
      channel: 'websocket',
      recipient: { userId },
      subject,
      body: `body of ${subject}`,
      meta: { n: subject },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    ids.push(res.body.notificationId);
  }
  return ids;
};
const delivered = (via: TestPlatform, tenantId: string, ids: string[]) =>
  eventually(async () => {
    const { rows } = await via.kernel.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM rm.notify_notifications WHERE tenant_id = $1 AND id = ANY($2) AND status = 'delivered'`,
      [tenantId, ids],
    );
    return rows[0]!.n === ids.length;
  }, `${ids.length} delivered`);

for (const bus of ['redis', 'postgres'] as const) {
  describe(`two server processes sharing one database, fan-out through ${bus}`, () => {
    let database: TestDatabase;
    /** serves sockets and the API; runs no delivery worker */
    let edge: TestPlatform;
    /** serves the API and delivers */
    let deliverer: TestPlatform;
    const env: Record<string, string> = bus === 'redis' ? { REDIS_URL: requireEnv('TEST_REDIS_URL') } : {};
    const tenantId = `t-${bus}`;

    beforeAll(async () => {
      database = await createTestDatabase('ws');
      edge = await startTestPlatform({ services: notifyHttpServices, database, env });
      deliverer = await startTestPlatform({ services: notifyServices, database, env });
      fast(edge);
      fast(deliverer);
    });
    afterAll(async () => {
      await edge?.close();
      await deliverer?.close();
      await database?.drop();
    });

    it('passes a notification delivered by the other process to the client at once, carrying notification_id', async () => {
      const token = testToken(tenantId, 'u-live', []);
      const client = await openSession(edge.url, token);
      try {
        expect(client.messages).toEqual([{ type: 'ready', user_id: 'u-live', replayed: 0 }]);
        const [id] = await sendTo(deliverer, tenantId, 'u-live', ['hello']);
        await client.waitFor((m) => m.some((x) => x.notification_id === id), 'the live notification');
        expect(client.notifications()).toEqual([
          {
            type: 'notification',
            notification_id: id,
            subject: 'hello',
            body: 'body of hello',
            format: 'text',
            priority: 'normal',
            data: { n: 'hello' },
            created_at: expect.any(String),
          },
        ]);
        // another user of the tenant, and the same user id in another tenant, receive nothing
      } finally {
        await client.close();
      }
    });

    it('after a reconnect to the other process, replays exactly the 20 missed notifications, in order, once', async () => {
      const token = testToken(tenantId, 'u-away', []);
      const first = await openSession(edge.url, token);
      const [seen] = await sendTo(deliverer, tenantId, 'u-away', ['before']);
      await first.waitFor((m) => m.some((x) => x.notification_id === seen), 'the first notification');
      await first.close();

      const subjects = Array.from({ length: 20 }, (_, i) => `missed ${i}`);
      const missed = await sendTo(edge, tenantId, 'u-away', subjects);
      await delivered(deliverer, tenantId, missed);
      // a bystander's messages stay theirs
      await sendTo(edge, tenantId, 'u-other', ['not yours']);
      await sendTo(edge, 'another-tenant', 'u-away', ['not yours either']);

      const again = await openSession(deliverer.url, token, seen);
      try {
        const replayed = again.notifications();
        expect(replayed.map((m) => m.notification_id)).toEqual(missed);
        expect(replayed.map((m) => m.subject)).toEqual(subjects);
        expect(replayed.every((m) => m.replay === true)).toBe(true);
        expect(again.messages.at(-1)).toEqual({ type: 'ready', user_id: 'u-away', replayed: 20 });
        // nothing comes twice afterwards
        await new Promise((r) => setTimeout(r, 300));
        expect(again.notifications()).toHaveLength(20);
        const [later] = await sendTo(edge, tenantId, 'u-away', ['later']);
        await again.waitFor((m) => m.some((x) => x.notification_id === later), 'the live one after the replay');
        expect(again.notifications().map((m) => m.notification_id)).toEqual([...missed, later]);
      } finally {
        await again.close();
      }
    });

    it('delivers a batch to many users together: each open socket gets its own message once, every one is buffered', async () => {
      const users = Array.from({ length: 30 }, (_, i) => `u-crowd-${i}`);
      for (const u of users) await seedMember(database.db, tenantId, u);
      const online = await Promise.all(users.slice(0, 3).map((u) => openSession(edge.url, testToken(tenantId, u, []))));
      try {
        const batch = await notifyClient(edge.url, tenantId).post('/notify/batch', {
          channel: 'websocket',
          subject: 'crowd',
          body: 'to each their own',
          recipients: users.map((userId) => ({ userId })),
        });
        expect(batch.status).toBe(202);
        await delivered(deliverer, tenantId, batch.body.ids);
        for (const [i, client] of online.entries())
          await client.waitFor((m) => m.some((x) => x.notification_id === batch.body.ids[i]), `user ${i}'s message`);
        await new Promise((r) => setTimeout(r, 300)); // nothing else arrives
        expect(online.map((c) => c.notifications().map((m) => m.notification_id))).toEqual(
          batch.body.ids.slice(0, 3).map((id: string) => [id]),
        );
        const { rows } = await database.db.query<{ user_id: string; notification_id: string }>(
          'SELECT user_id, notification_id FROM notify.socket_buffer WHERE tenant_id = $1 AND notification_id = ANY($2) ORDER BY seq',
          [tenantId, batch.body.ids],
        );
        expect(rows.map((r) => [r.user_id, r.notification_id])).toEqual(users.map((u, i) => [u, batch.body.ids[i]]));
      } finally {
        await Promise.all(online.map((c) => c.close()));
      }
    });

    it('replays at most the newest 100 of the hour', async () => {
      const token = testToken(tenantId, 'u-many', []);
      const c = notifyClient(edge.url, tenantId);
      await seedMember(database.db, tenantId, 'u-many');
      const batch = await c.post('/notify/batch', {
        channel: 'websocket',
        body: 'x',
        recipients: Array.from({ length: 120 }, () => ({ userId: 'u-many' })),
      });
      expect(batch.status).toBe(202);
      await delivered(deliverer, tenantId, batch.body.ids);
      const client = await openSession(edge.url, token, '01a20a8c-ac2e-7168-bf68-badd8380b7bc');
      try {
        expect(client.notifications().map((m) => m.notification_id)).toEqual(batch.body.ids.slice(20));
      } finally {
        await client.close();
      }
    });
  });
}

describe("the socket's door", () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ services: notifyHttpServices });
  });
  afterAll(async () => {
    await platform?.close();
  });

  const closedWith = async (client: SocketClient) => (await client.closed).code;

  it('closes with 4401 when the first message is not an auth message, or its token is refused', async () => {
    const notAuth = await connectSocket(platform.url);
    notAuth.send({ type: 'hello' });
    expect(await closedWith(notAuth)).toBe(4401);
    const badToken = await connectSocket(platform.url);
    badToken.send({ type: 'auth', token: 'forged' });
    expect(await closedWith(badToken)).toBe(4401);
    const garbage = await connectSocket(platform.url);
    garbage.send('{not json');
    expect(await closedWith(garbage)).toBe(4401);
  });

  it('closes with 4401 when the token it authenticated with expires, not before', async () => {
    // given a session whose token expires in 1.5 s, and one whose token lasts
    const expiring = await openSession(platform.url, testToken('t', 'u-exp', [], { expiresAt: Date.now() + 1_500 }));
    const lasting = await openSession(platform.url, testToken('t', 'u-last', [], { expiresAt: Date.now() + 600_000 }));
    const opened = Date.now();

    // when the first token expires, then the server closes that socket, and only that one
    const closed = await expiring.closed;
    expect(closed.code).toBe(4401);
    expect(Date.now() - opened).toBeGreaterThanOrEqual(1_000);
    lasting.send({ type: 'ping' });
    await lasting.waitFor((m) => m.some((x) => x.type === 'pong'), 'pong on the lasting session');
    await lasting.close();
  });

  it('answers pings, and a plain GET with 426 upgrade-required as a problem', async () => {
    const client = await openSession(platform.url, testToken('t', 'u', []));
    client.send({ type: 'ping' });
    await client.waitFor((m) => m.some((x) => x.type === 'pong'), 'pong');
    await client.close();
    const res = await fetch(`${platform.url}/v1/notify/ws`);
    expect(res.status).toBe(426);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(((await res.json()) as { type: string }).type).toMatch(/\/upgrade-required$/);
  });
});

describe('split deployment: the socket at the gateway', () => {
  let writeApi: TestPlatform;
  let readApi: TestPlatform;
  let gateway: TestPlatform;
  let workers: TestPlatform;
  const secret = Buffer.alloc(32, 7).toString('base64');

  beforeAll(async () => {
    const shared = { PLATFORM_SECRET_KEY: secret, REDIS_URL: requireEnv('TEST_REDIS_URL') };
    writeApi = await startTestPlatform({ role: 'write-api', services: notifyHttpServices, env: shared });
    const env = { ...shared, DATABASE_URL: writeApi.database.url };
    readApi = await startTestPlatform({ role: 'read-api', services: notifyHttpServices, env });
    gateway = await startTestPlatform({
      role: 'gateway',
      services: notifyHttpServices,
      env: { ...env, WRITE_API_URL: writeApi.url, READ_API_URL: readApi.url },
    });
    workers = await startTestPlatform({ role: 'workers', services: notifyServices, env });
    fast(workers);
  });
  afterAll(async () => {
    for (const p of [gateway, workers, readApi, writeApi]) await p?.close();
  });

  it('receives through the gateway what the workers role delivers, and replays after a reconnect', async () => {
    const token = testToken('split', 'u-split', []);
    const client = await openSession(gateway.url, token);
    const [first] = await sendTo(gateway, 'split', 'u-split', ['through the gateway'], writeApi.database.db);
    await client.waitFor((m) => m.some((x) => x.notification_id === first), 'the notification through the gateway');
    await client.close();
    const missed = await sendTo(gateway, 'split', 'u-split', ['a', 'b', 'c'], writeApi.database.db);
    await delivered(writeApi, 'split', missed);
    const again = await openSession(gateway.url, token, first);
    expect(again.notifications().map((m) => m.notification_id)).toEqual(missed);
    await again.close();
    const history = await notifyClient(gateway.url, 'split').get('/notify?channel=websocket');
    expect(history.body.data.map((n: { status: string }) => n.status)).toEqual([
      'delivered',
      'delivered',
      'delivered',
      'delivered',
    ]);
  });
});
