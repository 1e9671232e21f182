import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configureNotify } from '../../../commands/notify/context';
import { PLATFORM_TENANT_ID } from '../../../domain/identity/constants';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import type { SmtpCapture } from '../../support/smtp-capture';
import { startSmtpCapture } from '../../support/smtp-capture';
import { eventually, notifyServices, seedMember } from '../../support/notify';

/**
 * kernel.notifications: the platform's own messages (identity's mails, billing's notices) go
 * through the notification service when it is installed — queued, retried, in the history, their
 * X-Platform-* headers kept — and straight to the mail port when it is not.
 */
let smtp: SmtpCapture;
beforeAll(async () => {
  smtp = await startSmtpCapture();
});
afterAll(async () => {
  await smtp?.close();
});

describe('with the notification service installed', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ services: notifyServices, env: { SMTP_URL: smtp.url } });
    configureNotify(platform.kernel, { settings: { pollIntervalMs: 20 } });
  });
  afterAll(async () => {
    await platform?.close();
  });

  it('queues an account mail of the platform: the X-Platform headers reach the SMTP server, the history keeps the purpose', async () => {
    expect(platform.kernel.notifications.kind).toBe('notify');
    const { notificationId } = await platform.kernel.notifications.send({
      recipient: { address: 'new.user@example.test' },
      subject: 'Verify your email',
      body: 'Open https://app.example/verify-email?token=abc',
      headers: { 'X-Platform-Purpose': 'verify-email', 'X-Platform-Token': 'abc' },
      purpose: 'verify-email',
      module: 'identity',
      priority: 'high',
    });
    expect(notificationId).toEqual(expect.any(String));
    const mail = await smtp.waitFor((m) => m.parsed.headers.get('x-notification-id') === notificationId);
    expect(mail.envelope.to).toEqual(['new.user@example.test']);
    expect(mail.parsed.headers.get('x-platform-purpose')).toBe('verify-email');
    expect(mail.parsed.headers.get('x-platform-token')).toBe('abc');
    expect(mail.parsed.text?.trim()).toBe('Open https://app.example/verify-email?token=abc');
    const { rows } = await eventually(async () => {
      const r = await platform.kernel.db.query<{ status: string; purpose: string; module: string; priority: string }>(
        'SELECT status, purpose, module, priority FROM rm.notify_notifications WHERE tenant_id = $1 AND id = $2',
        [PLATFORM_TENANT_ID, notificationId],
      );
      return r.rows[0]?.status === 'delivered' ? r : undefined;
    }, 'delivered');
    expect(rows[0]).toEqual({ status: 'delivered', purpose: 'verify-email', module: 'identity', priority: 'high' });
    // the token was in the queue only until the mail left: nothing of it in events or the history
    const leftovers = await platform.kernel.db.query(`SELECT 1 FROM notify.deliveries WHERE id = $1`, [notificationId]);
    expect(leftovers.rowCount).toBe(0);
    const events = await platform.kernel.db.query<{ data: unknown }>(
      `SELECT data FROM es.events WHERE stream_id LIKE 'notify.notification:%'`,
    );
    expect(JSON.stringify(events.rows)).not.toContain('token=abc');
  });

  it("sends an HTML alternative, resolves a userId to the member's address, and uses a tenant's template", async () => {
    await seedMember(platform.kernel.db, 'billing-t', 'owner-1');
    const template = await platform.kernel.notifications.send({
      tenantId: 'billing-t',
      recipient: { userId: 'owner-1' },
      subject: 'Payment failed',
      body: 'Update your card.',
      html: '<p>Update your card.</p>',
      purpose: 'payment-failed',
      module: 'billing',
    });
    const mail = await smtp.waitFor((m) => m.parsed.headers.get('x-notification-id') === template.notificationId);
    expect(mail.envelope.to).toEqual(['owner-1@example.test']);
    expect(mail.parsed.html).toContain('<p>Update your card.</p>');
  });

  it('refuses a header that is not X-… or spans lines', async () => {
    await expect(
      platform.kernel.notifications.send({
        recipient: { address: 'a@example.test' },
        body: 'x',
        headers: { 'X-Evil': 'a\r\nBcc: b@example.test' },
        purpose: 'test',
        module: 'identity',
      }),
    ).rejects.toMatchObject({ status: 400, suffix: 'validation-error' });
    await expect(
      platform.kernel.notifications.send({
        recipient: { address: 'a@example.test' },
        body: 'x',
        headers: { Bcc: 'b@example.test' },
        purpose: 'test',
        module: 'identity',
      }),
    ).rejects.toMatchObject({ status: 400 });
  });
});

describe('without the notification service', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ env: { SMTP_URL: smtp.url } });
  });
  afterAll(async () => {
    await platform?.close();
  });

  it('hands the mail to the mail port at once, headers included', async () => {
    expect(platform.kernel.notifications.kind).toBe('mail');
    const sent = await platform.kernel.notifications.send({
      recipient: { address: 'direct@example.test' },
      subject: 'Reset your password',
      body: 'link',
      headers: { 'X-Platform-Purpose': 'password-reset', 'X-Platform-Token': 't0k' },
      purpose: 'password-reset',
      module: 'identity',
    });
    expect(sent.notificationId).toBeNull();
    const mail = smtp.messages.find((m) => m.envelope.to.includes('direct@example.test'));
    expect(mail?.parsed.headers.get('x-platform-token')).toBe('t0k');
    await expect(
      platform.kernel.notifications.send({ recipient: { userId: 'u' }, body: 'x', purpose: 'p', module: 'm' }),
    ).rejects.toThrow(/notification service/);
  });
});
