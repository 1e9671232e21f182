import { createECDH, randomBytes, randomUUID } from 'node:crypto';
import type { AddressInfo, Server, Socket } from 'node:net';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DESTINATION_REFUSED } from '../../../infra/security/outbound';
import type { ApiClient, Body } from '../../support/events';
import { EVENTS_TEST_ENV, moduleClient, ownerClient, registerModule, uniqueSlug } from '../../support/events';
import type { Answer, NotifyClient } from '../../support/notify';
import { eventually, notifyClient, seedMember } from '../../support/notify';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import { testResolver } from '../../support/resolver';

/**
 * Destinations a tenant (or a module) gives — an email channel's SMTP server, a browser's push
 * service, a module's webhook endpoint — never reach inside when the guard is on
 * (OUTBOUND_ALLOW_PRIVATE=false, what staging and production default to; DESIGN.md mechanism 11).
 * Refused at registration when the URL names, or resolves to, a loopback, private, link-local or
 * metadata address; refused again at connect time when a name that answered a public address at
 * registration answers an inside one at delivery (DNS rebinding). The tenant reads a category,
 * never the inside service's words.
 *
 * Not one packet leaves loopback: every name resolves through a stub (tests/support/resolver.ts;
 * unknown names do not resolve), the only addresses ever connected to would be 127.0.0.1, where a
 * listener counts what reaches it; names mapped to 10.0.0.1 or 169.254.169.254 at delivery are
 * tried only once the same path has been seen to refuse loopback.
 */
const PUBLIC = '93.184.215.14';
const SECRET_BANNER = '220 internal-db-01.corp.example ESMTP secret-build-7731';
const dns = testResolver();
let platform: TestPlatform;
let inside: Server;
let insidePort = 0;
const insideSeen: string[] = [];
const sockets = new Set<Socket>();
let c: NotifyClient;
const tenant = `t-${randomUUID()}`;
/** set once a mail to a name rebound to loopback was refused without a connection: the path is guarded */
let emailPathGuarded = false;

const problem = (res: Answer, status: number, suffix: string) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.type).toMatch(new RegExp(`/${suffix}$`));
};
const refusedAt = (res: Answer, field: string) => {
  problem(res, 400, 'validation-error');
  expect(res.body.errors).toContainEqual(expect.objectContaining({ field, code: 'DESTINATION_NOT_ALLOWED' }));
  expect(JSON.stringify([res.body.detail, res.body.errors])).not.toMatch(/10\.0\.0\.1|169\.254|127\.0\.0\.1/);
};
/** a push subscription as a browser makes one, to an endpoint of the test's choosing */
const subscription = (endpoint: string) => ({
  endpoint,
  keys: {
    p256dh: createECDH('prime256v1').generateKeys().toString('base64url'),
    auth: randomBytes(16).toString('base64url'),
  },
});
/** the first failed attempt of a notification: its lastError */
const lastErrorOf = (id: string) =>
  eventually(async () => {
    const n = (await c.get(`/notify/${id}`)).body;
    return n.lastError ? (n.lastError as string) : undefined;
  }, `${id} to fail an attempt`);

beforeAll(async () => {
  // an inside service: anything that reaches it reads its banner
  inside = createServer((socket) => {
    insideSeen.push(`${socket.remoteAddress}:${socket.remotePort}`);
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    socket.write(`${SECRET_BANNER}\r\n`);
  });
  await new Promise<void>((resolve) => inside.listen(0, '127.0.0.1', resolve));
  insidePort = (inside.address() as AddressInfo).port;
  platform = await startTestPlatform({
    services: ['notify', 'events'],
    resolver: dns,
    env: { ...EVENTS_TEST_ENV, OUTBOUND_ALLOW_PRIVATE: 'false', NOTIFY_POLL_INTERVAL_MS: '20' },
  });
  c = notifyClient(platform.url, tenant);
  await seedMember(platform.kernel.db, tenant, 'u-browser');
});
afterAll(async () => {
  await platform?.close();
  for (const s of sockets) s.destroy();
  await new Promise((resolve) => inside?.close(resolve));
});

describe("a tenant's email channel", () => {
  it('is refused when its SMTP URL names a loopback, private, link-local or metadata address', async () => {
    for (const smtpUrl of [
      `smtp://127.0.0.1:${insidePort}`,
      'smtp://10.0.0.1:25',
      'smtps://user:pw@169.254.169.254:465',
      'smtp://[::ffff:10.0.0.1]:25',
      'smtp://[::1]:25',
      'smtps://[fd00:ec2::254]:465',
      'smtp://0.0.0.0:25',
    ]) {
      const res = await c.post('/notify/channels', {
        name: `mail-${randomUUID()}`,
        type: 'email',
        config: { smtpUrl, from: 'news@acme.example' },
      });
      refusedAt(res, 'config.smtpUrl');
    }
    expect((await c.get('/notify/channels')).body.data).toHaveLength(3);
  });

  it('is refused when its host name resolves inside', async () => {
    dns.set('mail.inside.test', ['10.0.0.1']);
    dns.set('mail.metadata.test', ['169.254.169.254']);
    dns.set('mail.mixed.test', [PUBLIC, '192.168.1.10']);
    for (const host of ['mail.inside.test', 'mail.metadata.test', 'mail.mixed.test'])
      refusedAt(
        await c.post('/notify/channels', {
          name: `mail-${randomUUID()}`,
          type: 'email',
          config: { smtpUrl: `smtp://${host}:25`, from: 'news@acme.example' },
        }),
        'config.smtpUrl',
      );
  });

  it("is refused when its URL carries nodemailer's options (a proxy, a local sendmail binary)", async () => {
    dns.set('mail.public.test', [PUBLIC]);
    for (const smtpUrl of [
      `smtp://mail.public.test:25?proxy=http://127.0.0.1:${insidePort}`,
      'smtp://mail.public.test:25?sendmail=true&path=/bin/sh',
      'smtp://mail.public.test:25/#x',
    ]) {
      const res = await c.post('/notify/channels', {
        name: `mail-${randomUUID()}`,
        type: 'email',
        config: { smtpUrl, from: 'news@acme.example' },
      });
      problem(res, 400, 'validation-error');
      expect(res.body.errors[0].field).toBe('config.smtpUrl');
    }
  });

  it('whose name answers a public address at registration and loopback at delivery (DNS rebinding) is refused at connect time: nothing reaches the inside service', async () => {
    dns.set('mail.rebind.test', ['127.0.0.1']);
    const config = { smtpUrl: `smtp://mail.rebind.test:${insidePort}`, from: 'news@acme.example' };
    refusedAt(await c.post('/notify/channels', { name: 'Rebind Mail', type: 'email', config }), 'config.smtpUrl');
    dns.set('mail.rebind.test', [PUBLIC]);
    expect((await c.post('/notify/channels', { name: 'Rebind Mail', type: 'email', config })).status).toBe(201);
    dns.set('mail.rebind.test', ['127.0.0.1']);
    const sent = await c.post('/notify', {
      channel: 'Rebind Mail',
      recipient: { address: 'ann@example.test' },
      subject: 'hello',
      body: 'x',
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    expect(await lastErrorOf(sent.body.notificationId)).toBe(DESTINATION_REFUSED);
    expect(insideSeen).toEqual([]);
    emailPathGuarded = true;
  });

  it.each([
    ['a private address', '10.0.0.1'],
    ['the metadata service', '169.254.169.254'],
  ])('whose name is rebound to %s is refused at connect time too', async (_what, address) => {
    // the same delivery path refused loopback above without connecting; only then is a name mapped beyond it
    expect(emailPathGuarded).toBe(true);
    const name = `mail-${randomUUID().slice(0, 8)}.rebind.test`;
    dns.set(name, [PUBLIC]);
    const channel = `Mail ${address}`;
    const made = await c.post('/notify/channels', {
      name: channel,
      type: 'email',
      config: { smtpUrl: `smtp://${name}:25`, from: 'news@acme.example' },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    dns.set(name, [address]);
    const sent = await c.post('/notify', { channel, recipient: { address: 'ann@example.test' }, body: 'x' });
    expect(await lastErrorOf(sent.body.notificationId)).toBe(DESTINATION_REFUSED);
  });
});

describe("a user's push subscription", () => {
  const browser = () => notifyClient(platform.url, tenant, 'u-browser', []);

  it('is refused when its endpoint names or resolves to an inside address', async () => {
    dns.set('push.inside.test', ['10.1.2.3']);
    for (const endpoint of [
      `https://127.0.0.1:${insidePort}/push/1`,
      'https://[::1]/push/1',
      'https://169.254.169.254/latest/meta-data/',
      'https://[::ffff:169.254.169.254]/x',
      'https://push.inside.test/push/1',
    ])
      refusedAt(await browser().post('/notify/push/subscriptions', subscription(endpoint)), 'endpoint');
    const stored = await platform.kernel.db.query('SELECT 1 FROM notify.push_subscriptions WHERE tenant_id = $1', [
      tenant,
    ]);
    expect(stored.rowCount).toBe(0);
  });

  it('whose push service is rebound to loopback after subscribing is refused at connect time: nothing reaches the inside service', async () => {
    const endpoint = `https://push.rebind.test:${insidePort}/push/1`;
    dns.set('push.rebind.test', ['127.0.0.1']);
    refusedAt(await browser().post('/notify/push/subscriptions', subscription(endpoint)), 'endpoint');
    dns.set('push.rebind.test', [PUBLIC]);
    const subscribed = await browser().post('/notify/push/subscriptions', subscription(endpoint));
    expect(subscribed.status, JSON.stringify(subscribed.body)).toBe(201);
    dns.set('push.rebind.test', ['127.0.0.1']);
    const sent = await c.post('/notify', {
      channel: 'push',
      recipient: { userId: 'u-browser' },
      subject: 'hi',
      body: 'x',
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    expect(await lastErrorOf(sent.body.notificationId)).toBe(`push service: ${DESTINATION_REFUSED}`);
    expect(insideSeen).toEqual([]);
  });
});

describe("a module's webhook endpoint", () => {
  const manifest = (endpoint: string) => {
    const slug = uniqueSlug('hook');
    return { slug, version: '1.0.0', events: { publishes: [`${slug}.thing.done`], subscribes: [], endpoint } };
  };

  it('is refused at registration and at update when it names or resolves to an inside address', async () => {
    dns.set('hooks.inside.test', ['172.16.5.4']);
    dns.set('hooks.metadata.test', ['fd00:ec2::254']);
    for (const endpoint of [
      `http://127.0.0.1:${insidePort}/events`,
      'https://10.0.0.1/events',
      'http://169.254.169.254/latest/meta-data/',
      'https://hooks.inside.test/events',
      'https://hooks.metadata.test/events',
    ])
      refusedAt(await ownerClient(platform).call('POST', '/modules', manifest(endpoint)), 'events.endpoint');
    dns.set('hooks.public.test', [PUBLIC]);
    const m = manifest('https://hooks.public.test/events');
    const made = await ownerClient(platform).call('POST', '/modules', m);
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const update = { ...m, version: '1.1.0', events: { ...m.events, endpoint: 'https://hooks.inside.test/events' } };
    refusedAt(await ownerClient(platform).call('PATCH', `/modules/${made.body.id}`, update), 'events.endpoint');
  });

  it('rebound to loopback after registration is refused at every delivery; the dead letter tells the tenant no more than that', async () => {
    const slug = uniqueSlug('rebind');
    const topic = `platform.${slug}.events`;
    const m = {
      slug,
      version: '1.0.0',
      events: {
        publishes: [`${slug}.thing.done`],
        subscribes: [topic],
        endpoint: `http://hooks.rebind.test:${insidePort}/events`,
      },
    };
    dns.set('hooks.rebind.test', ['127.0.0.1']);
    refusedAt(await ownerClient(platform).call('POST', '/modules', m), 'events.endpoint');
    dns.set('hooks.rebind.test', [PUBLIC]);
    const module = await registerModule(platform, m, [tenant]);
    const client: ApiClient = moduleClient(platform, module, tenant);
    const sub = await client.call('POST', '/events/subscriptions', {
      topic,
      consumerGroup: `${slug}.things`,
      handlerName: 'things',
    });
    expect(sub.status, JSON.stringify(sub.body)).toBe(201);
    dns.set('hooks.rebind.test', ['127.0.0.1']);
    const published = await client.call('POST', '/events/publish', {
      topic,
      type: `${slug}.thing.done`,
      payload: { n: 1 },
    });
    expect(published.status, JSON.stringify(published.body)).toBe(202);
    const dead = await eventually(async () => {
      const list = await client.call('GET', `/events/dlq?topic=${topic}`);
      return list.body.data.find((d: Body) => d.eventId === published.body.eventId);
    }, 'the event dead-lettered');
    expect(dead).toMatchObject({ failureCount: 3, lastError: DESTINATION_REFUSED });
    expect(insideSeen).toEqual([]);
  });
});
