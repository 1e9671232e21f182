import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configureNotify, notifyContext } from '../../../commands/notify/context';
import { purgeExpired } from '../../../commands/notify/retention';
import { fixedClock } from '../../../infra/runtime/clock';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import type { SmtpCapture } from '../../support/smtp-capture';
import { startSmtpCapture } from '../../support/smtp-capture';
import { eventually, notifyClient, notifyServices, seedMember, statusCounts } from '../../support/notify';

/** spec 002: history 90 days (NOTIFY_HISTORY_RETENTION_DAYS), failed 180 days; the socket buffer an hour */
const DAY = 86_400_000;
const clock = fixedClock(new Date('2026-05-01T00:00:00.000Z'));
let platform: TestPlatform;
let smtp: SmtpCapture;

beforeAll(async () => {
  smtp = await startSmtpCapture();
  platform = await startTestPlatform({ services: notifyServices, env: { SMTP_URL: smtp.url }, clock });
  configureNotify(platform.kernel, { settings: { pollIntervalMs: 20 } });
});
afterAll(async () => {
  await platform?.close();
  await smtp?.close();
});

describe('the retention worker', () => {
  it('purges delivered history after 90 days and failed notifications (with their queued content) after 180', async () => {
    await seedMember(platform.kernel.db, 'keep', 'ws-user');
    const c = notifyClient(platform.url, 'keep');
    const ok = await c.post('/notify', { channel: 'email', recipient: { address: 'fine@example.test' }, body: 'x' });
    const live = await c.post('/notify', { channel: 'websocket', recipient: { userId: 'ws-user' }, body: 'x' });
    await eventually(async () => (await statusCounts(platform.kernel.db, 'keep')).delivered === 2, 'two delivered');
    smtp.behaviour.refuse = { code: 550, message: 'no such user' };
    const bad = await c.post('/notify', { channel: 'email', recipient: { address: 'bounce@example.test' }, body: 'x' });
    await eventually(
      async () =>
        JSON.stringify(await statusCounts(platform.kernel.db, 'keep')) === JSON.stringify({ delivered: 2, failed: 1 }),
      'two delivered, one failed',
    );
    smtp.behaviour.refuse = null;
    const ctx = notifyContext(platform.kernel);

    clock.advance(3600_000 + 1);
    expect((await purgeExpired(platform.kernel, ctx)).buffer).toBe(1);
    clock.advance(90 * DAY - 3600_000 - 2);
    expect(await purgeExpired(platform.kernel, ctx)).toEqual({ history: 0, failed: 0, buffer: 0 });
    clock.advance(2);
    expect(await purgeExpired(platform.kernel, ctx)).toMatchObject({ history: 2, failed: 0 });
    expect((await c.get(`/notify/${ok.body.notificationId}`)).status).toBe(404);
    expect((await c.get(`/notify/${live.body.notificationId}`)).status).toBe(404);
    expect((await c.get(`/notify/${bad.body.notificationId}`)).body.status).toBe('failed');

    clock.advance(90 * DAY);
    expect(await purgeExpired(platform.kernel, ctx)).toMatchObject({ history: 0, failed: 1 });
    expect((await c.get(`/notify/${bad.body.notificationId}`)).status).toBe(404);
    expect((await platform.kernel.db.query(`SELECT 1 FROM notify.deliveries WHERE tenant_id = 'keep'`)).rowCount).toBe(
      0,
    );
  });
});
