import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billingContext } from '../../../commands/billing/context';
import { applyProviderCommands, createSubscription } from '../../../commands/billing/handlers';
import type { BillingNotice } from '../../../commands/billing/notices';
import { deliverNotices, recordNotices } from '../../../commands/billing/notices';
import { configureNotify } from '../../../commands/notify/context';
import { FREE_PLAN_ID } from '../../../domain/billing/plan';
import { systemMeta } from '../../../infra/kernel';
import { uuidV7Ids } from '../../../infra/runtime/clock';
import { seedTenant } from '../../support/billing';
import { escalate, eventually } from '../../support/billing-http';
import { offsetClock } from '../../support/clock';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import type { SmtpCapture } from '../../support/smtp-capture';
import { startSmtpCapture } from '../../support/smtp-capture';

/**
 * Billing's notices go through the platform's notification port (kernel.notifications): with the
 * notification service installed they are queued there — in its history with module billing, the
 * notice's purpose and priority — and reach the owner's mailbox with billing's X-Platform headers.
 * (Without the service they go straight to the mail port: the escalation suite counts them there.)
 */
const clock = offsetClock();
let smtp: SmtpCapture;
let p: TestPlatform;

beforeAll(async () => {
  smtp = await startSmtpCapture();
  p = await startTestPlatform({
    services: ['billing', 'notify'],
    clock,
    env: { SMTP_URL: smtp.url, BILLING_ESCALATION_INTERVAL_SEC: '3600' },
  });
  configureNotify(p.kernel, { settings: { pollIntervalMs: 20 } });
});
afterAll(async () => {
  await p?.close();
  await smtp?.close();
});

describe('billing notices with the notification service installed', () => {
  it('queues the past-due notice in the notification service, which mails it to the tenant owner', async () => {
    expect(p.kernel.notifications.kind).toBe('notify');
    const { tenantId, email } = await seedTenant(p.kernel.db);
    const ctx = billingContext(p.kernel);
    await p.kernel.commands.run(systemMeta(tenantId), (uow) =>
      createSubscription(uow, ctx, { tenantId, planId: FREE_PLAN_ID, externalId: null }),
    );
    await p.kernel.commands.run(systemMeta(tenantId), (uow) =>
      applyProviderCommands(uow, ctx, tenantId, [{ type: 'RecordPaymentFailure', now: clock.now().toISOString() }]),
    );

    await escalate(p.kernel);

    const notice = await p.kernel.db.query<{ status: string; kind: string }>(
      'SELECT status, kind FROM billing.notices WHERE tenant_id = $1',
      [tenantId],
    );
    expect(notice.rows).toEqual([{ status: 'sent', kind: 'past_due' }]);
    const queued = await eventually(
      () =>
        p.kernel.db.query<{ status: string; module: string; purpose: string; priority: string }>(
          'SELECT status, module, purpose, priority FROM rm.notify_notifications WHERE tenant_id = $1',
          [tenantId],
        ),
      (r) => r.rows[0]?.status === 'delivered',
      15_000,
      'the notice delivered by the notification service',
    );
    expect(queued.rows).toEqual([
      { status: 'delivered', module: 'billing', purpose: 'billing.past_due', priority: 'high' },
    ]);
    const mail = await smtp.waitFor((m) => m.envelope.to.includes(email));
    expect(mail.parsed.headers.get('x-platform-purpose')).toBe('billing.past_due');
    expect(mail.parsed.headers.get('x-platform-tenant')).toBe(tenantId);
    expect(mail.parsed.headers.get('x-notification-id')).toEqual(expect.any(String));
    expect(mail.parsed.subject).toBe('Payment failed: your subscription is past due');
  });
});

describe('a notice being sent', () => {
  it('is not claimed again by a second worker while the first is still sending, even when the clock jumps by days', async () => {
    const { tenantId, email } = await seedTenant(p.kernel.db);
    const ctx = billingContext(p.kernel);
    await recordNotices(p.kernel.db, uuidV7Ids, clock.now(), tenantId, 'sub-1', [
      { kind: 'payment_reminder', key: 'episode:x:day3', episode: 'x', subject: 'Reminder', text: 'unpaid' },
    ]);
    const sent: BillingNotice[] = [];
    let release!: () => void;
    const slowSend = new Promise<void>((resolve) => (release = resolve));
    const failOnError = (error: unknown) => {
      throw error;
    };

    // given a worker that claimed the notice and is still sending it
    const first = deliverNotices(
      p.kernel.db,
      {
        send: async (n) => {
          sent.push(n);
          await slowSend;
        },
      },
      ctx.tenants,
      clock,
      failOnError,
    );
    await eventually(
      async () => sent.length,
      (n) => n === 1,
      5_000,
      'the first worker sending',
    );
    // when the business clock jumps 3 days and a second worker looks for due notices
    clock.advance(3 * 86_400_000);
    const second = await deliverNotices(
      p.kernel.db,
      {
        send: async (n) => {
          sent.push(n);
        },
      },
      ctx.tenants,
      clock,
      failOnError,
    );

    // then the second finds nothing to send, and the notice reaches the owner once
    expect(second.sent).toBe(0);
    release();
    expect((await first).sent).toBe(1);
    expect(sent.map((n) => [n.to, n.key])).toEqual([[email, 'episode:x:day3']]);
    const stored = await p.kernel.db.query('SELECT status, attempts FROM billing.notices WHERE tenant_id = $1', [
      tenantId,
    ]);
    expect(stored.rows).toEqual([{ status: 'sent', attempts: 1 }]);
  });
});
