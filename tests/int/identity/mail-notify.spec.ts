import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORM_TENANT_ID } from '../../../domain/identity/constants';
import type { IdentityPlatform } from '../../support/identity';
import { PASSWORD, mailToken, registerUser, startIdentityPlatform, uniqueEmail } from '../../support/identity';
import { eventually } from '../../support/notify';

/**
 * Identity's mails go through kernel.notifications: with the notification service running they are
 * queued, delivered by its workers (same headers, one Message-ID per notification) and kept in the
 * platform's history by purpose, without their one-time tokens.
 */
let p: IdentityPlatform;
beforeAll(async () => {
  p = await startIdentityPlatform({ services: ['identity', 'notify'] });
});
afterAll(async () => {
  await p?.close();
});

const historyOf = (notificationId: string) =>
  eventually(async () => {
    const { rows } = await p.kernel.db.query<{ status: string; purpose: string; module: string; priority: string }>(
      'SELECT status, purpose, module, priority FROM rm.notify_notifications WHERE tenant_id = $1 AND id = $2',
      [PLATFORM_TENANT_ID, notificationId],
    );
    return rows[0]?.status === 'delivered' ? rows[0] : undefined;
  }, `notification ${notificationId} delivered`);

describe('identity mails with the notification service running', () => {
  it('given a new account, when it registers, then its verification mail is a delivered notification of module identity', async () => {
    const user = await registerUser(p);
    const mail = await p.smtp.waitFor(
      (m) => m.envelope.to.includes(user.email) && m.parsed.headers.get('x-platform-purpose') === 'verify-email',
    );
    const notificationId = mail.parsed.headers.get('x-notification-id') as string;
    expect(notificationId).toMatch(/^[0-9a-f-]{36}$/);
    expect(await historyOf(notificationId)).toEqual({
      status: 'delivered',
      purpose: 'verify-email',
      module: 'identity',
      priority: 'high',
    });
    const verified = await p.api('/auth/verify-email', {
      body: { token: mail.parsed.headers.get('x-platform-token') },
    });
    expect(verified.status).toBe(200);
    const stored = await p.kernel.db.query(`SELECT 1 FROM es.events WHERE data::text LIKE $1`, [
      `%${mail.parsed.headers.get('x-platform-token') as string}%`,
    ]);
    expect(stored.rowCount).toBe(0);
  });

  it('given an account, when a reset is requested, then the reset mail arrives through the queue and its token sets a new password', async () => {
    const user = await registerUser(p);
    const before = p.smtp.messages.length;
    expect((await p.api('/auth/request-reset', { body: { email: user.email } })).status).toBe(202);
    const token = await mailToken(p, user.email, 'reset', before);
    const mail = p.smtp.messages.find((m) => m.parsed.headers.get('x-platform-token') === token)!;
    expect(await historyOf(mail.parsed.headers.get('x-notification-id') as string)).toMatchObject({
      purpose: 'reset',
      module: 'identity',
    });
    const newPassword = `${PASSWORD} renewed`;
    expect((await p.api('/auth/reset-password', { body: { token, password: newPassword } })).status).toBe(200);
    expect((await p.api('/auth/login', { body: { email: user.email, password: newPassword } })).status).toBe(200);
  });

  it('given an unknown address, when a reset is requested, then nothing is queued for it (same answer, no notification)', async () => {
    const email = uniqueEmail('nobody');
    expect((await p.api('/auth/request-reset', { body: { email } })).status).toBe(202);
    // a known address's mail is queued within milliseconds of the answer (sendLater): a second is ample
    await new Promise((r) => setTimeout(r, 1_000));
    const { rows } = await p.kernel.db.query('SELECT 1 FROM rm.notify_notifications WHERE recipient_address = $1', [
      email,
    ]);
    expect(rows).toHaveLength(0);
    expect(p.smtp.messages.some((m) => m.envelope.to.includes(email))).toBe(false);
  });
});
