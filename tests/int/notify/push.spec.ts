import webpush from 'web-push';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configureNotify } from '../../../commands/notify/context';
import { deriveVapidKeys } from '../../../projections/notify/shared/vapid';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import type { PushService } from '../../support/push-service';
import { startPushService } from '../../support/push-service';
import type { Answer, NotifyClient } from '../../support/notify';
import { eventually, notifyClient, notifyServices, seedMember } from '../../support/notify';

/** browser push against a push service that verifies VAPID and decrypts the payload as a browser does */
let platform: TestPlatform;
let service: PushService;
let c: NotifyClient;
/** the same user, as their own client (push subscriptions are the caller's own) */
let browser: NotifyClient;

const problem = (res: Answer, status: number, suffix: string) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.type).toMatch(new RegExp(`/${suffix}$`));
};
const until = (id: string, status: string) =>
  eventually(async () => {
    const n = (await c.get(`/notify/${id}`)).body;
    return n.status === status ? n : undefined;
  }, `${id} ${status}`);

beforeAll(async () => {
  service = await startPushService();
  platform = await startTestPlatform({ services: notifyServices });
  configureNotify(platform.kernel, { settings: { pollIntervalMs: 20 }, pushCa: service.ca });
  await seedMember(platform.kernel.db, 'push-t', 'pat');
  c = notifyClient(platform.url, 'push-t', 'sender');
  browser = notifyClient(platform.url, 'push-t', 'pat', []);
});
afterAll(async () => {
  await platform?.close();
  await service?.close();
});

describe("browser push with the platform's VAPID keys", () => {
  it('publishes the public key derived from PLATFORM_SECRET_KEY', async () => {
    const res = await browser.get('/notify/push/vapid-key');
    expect(res.status).toBe(200);
    expect(res.body.publicKey).toBe(deriveVapidKeys(platform.kernel.engines.secrets).publicKey);
    expect(Buffer.from(res.body.publicKey, 'base64url')).toHaveLength(65);
  });

  it("delivers an encrypted payload the browser decrypts, with a VAPID JWT for the push service's origin", async () => {
    const { publicKey } = (await browser.get('/notify/push/vapid-key')).body;
    const sub = service.subscribe(publicKey);
    expect((await browser.post('/notify/push/subscriptions', sub.json)).status).toBe(201);
    const sent = await c.post('/notify', {
      channel: 'push',
      recipient: { userId: 'pat' },
      subject: 'Your order',
      body: 'has shipped',
      priority: 'critical',
      meta: { orderId: 7 },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    await until(sent.body.notificationId, 'delivered');
    expect(service.refusals).toEqual([]);
    const [message] = service.messages.filter((m) => m.subscriptionId === sub.id);
    expect(message!.payload).toEqual({
      notification_id: sent.body.notificationId,
      title: 'Your order',
      body: 'has shipped',
      priority: 'critical',
      data: { orderId: 7 },
    });
    expect(message!.jwt.aud).toBe(service.url);
    expect(message!.jwt.sub).toMatch(/^mailto:/);
    expect(message!.headers.urgency).toBe('high');
    expect(message!.headers['x-notification-id']).toBe(sent.body.notificationId);
  });

  it('drops a subscription the push service no longer knows (410) and fails a notification with nowhere to go', async () => {
    await seedMember(platform.kernel.db, 'push-t', 'gone');
    const goneUser = notifyClient(platform.url, 'push-t', 'gone', []);
    const sub = service.subscribe((await goneUser.get('/notify/push/vapid-key')).body.publicKey);
    expect((await goneUser.post('/notify/push/subscriptions', sub.json)).status).toBe(201);
    service.expire(sub.id);
    const sent = await c.post('/notify', { channel: 'push', recipient: { userId: 'gone' }, body: 'anyone?' });
    const failed = await until(sent.body.notificationId, 'failed');
    expect(failed).toMatchObject({ retries: 0, lastError: 'every push subscription of the user has expired' });
    const { rowCount } = await platform.kernel.db.query(
      `SELECT 1 FROM notify.push_subscriptions WHERE tenant_id = 'push-t' AND user_id = 'gone'`,
    );
    expect(rowCount).toBe(0);
  });

  it('refuses a subscription that is not https, a payload too large for push, and an address recipient', async () => {
    problem(
      await browser.post('/notify/push/subscriptions', {
        endpoint: 'http://127.0.0.1/push/x',
        keys: service.subscribe('k').json.keys,
      }),
      400,
      'validation-error',
    );
    const tooLarge = await c.post('/notify', { channel: 'push', recipient: { userId: 'pat' }, body: 'x'.repeat(5000) });
    problem(tooLarge, 400, 'validation-error');
    expect(tooLarge.body.errors[0].code).toBe('PUSH_PAYLOAD_TOO_LARGE');
    problem(
      await c.post('/notify', { channel: 'push', recipient: { address: 'pat@example.test' }, body: 'x' }),
      400,
      'validation-error',
    );
  });

  it("lets the user remove their own subscription, not someone else's", async () => {
    const sub = service.subscribe('key');
    expect((await browser.post('/notify/push/subscriptions', sub.json)).status).toBe(201);
    const other = notifyClient(platform.url, 'push-t', 'someone-else', []);
    problem(
      await other.call('DELETE', `/notify/push/subscriptions?endpoint=${encodeURIComponent(sub.json.endpoint)}`),
      404,
      'not-found',
    );
    expect(
      (await browser.call('DELETE', `/notify/push/subscriptions?endpoint=${encodeURIComponent(sub.json.endpoint)}`))
        .status,
    ).toBe(204);
  });
});

describe('a registered push channel with VAPID keys of its own', () => {
  it('signs with its own key, and keeps the private key sealed and redacted', async () => {
    const keys = webpush.generateVAPIDKeys();
    const registered = await c.post('/notify/channels', {
      name: 'brand-push',
      type: 'push',
      iconUrl: 'https://brand.example/icon.png',
      config: {
        vapidPublicKey: keys.publicKey,
        vapidPrivateKey: keys.privateKey,
        subject: 'mailto:push@brand.example',
      },
    });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    expect(registered.body.config).toEqual({
      vapidPublicKey: keys.publicKey,
      vapidPrivateKey: '[redacted]',
      subject: 'mailto:push@brand.example',
    });
    const listed = (await c.get('/notify/channels')).body.data.find((ch: { name: string }) => ch.name === 'brand-push');
    expect(listed.config.vapidPrivateKey).toBe('[redacted]');
    const { rows } = await platform.kernel.db.query<{ data: unknown }>(
      `SELECT data FROM es.events WHERE type = 'notify.channel.registered'`,
    );
    expect(JSON.stringify(rows)).not.toContain(keys.privateKey);

    await seedMember(platform.kernel.db, 'push-t', 'fan');
    const fan = notifyClient(platform.url, 'push-t', 'fan', []);
    const sub = service.subscribe(keys.publicKey);
    expect((await fan.post('/notify/push/subscriptions', sub.json)).status).toBe(201);
    const sent = await c.post('/notify', {
      channel: 'brand-push',
      recipient: { userId: 'fan' },
      subject: 'Brand',
      body: 'news',
    });
    expect(sent.body.channel).toBe('brand-push');
    await until(sent.body.notificationId, 'delivered');
    const message = service.messages.find((m) => m.subscriptionId === sub.id)!;
    expect(message.jwt.sub).toBe('mailto:push@brand.example');
    expect(message.payload.title).toBe('Brand');
  });
});
