import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkLag } from '../../../commands/events/lag';
import { offsetClock } from '../../support/clock';
import type { ApiClient, Receiver, RegisteredModule } from '../../support/events';
import { EVENTS_TEST_ENV, eventually, subscribedModule, startReceiver } from '../../support/events';
import { seedOwner } from '../../support/files';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import type { SmtpCapture } from '../../support/smtp-capture';
import { startSmtpCapture } from '../../support/smtp-capture';

/**
 * Consumer lag alerts (spec 002: over 1 minute info, over 5 warning, over 15 critical): an event
 * whose handler failed waits for its retry an hour later, so its subscription falls behind while
 * the test moves the clock; each level is announced once, and the position shows it. Warning and
 * critical are mailed to the tenant's Owners (identity's read models) through kernel.notifications.
 */
describe('consumer lag alerts', () => {
  const clock = offsetClock();
  let platform: TestPlatform;
  let receiver: Receiver;
  let mod: RegisteredModule;
  let client: ApiClient;
  let subscriptionId: string;
  let smtp: SmtpCapture;
  const tenantId = randomUUID();
  const ownerEmail = `owner-${tenantId}@example.test`;

  beforeAll(async () => {
    smtp = await startSmtpCapture();
    platform = await startTestPlatform({
      role: 'all',
      services: ['events', 'identity'],
      clock,
      captureLogs: true,
      env: {
        ...EVENTS_TEST_ENV,
        EVENTS_RETRY_BACKOFF_MS: '3600000',
        EVENTS_LAG_CHECK_INTERVAL_MS: '3600000',
        SMTP_URL: smtp.url,
      },
    });
    await seedOwner(platform.kernel.db, tenantId, randomUUID(), ownerEmail);
    receiver = await startReceiver();
    ({
      module: mod,
      client,
      subscriptionId,
    } = await subscribedModule(platform, {
      prefix: 'lag',
      event: 'job.ran',
      handler: 'jobs',
      receiver,
      tenantId,
    }));
  });
  afterAll(async () => {
    await platform?.close();
    await receiver?.close();
    await smtp?.close();
  });
  const alertsMailed = () =>
    smtp.messages.filter((m) => m.envelope.to.includes(ownerEmail)).map((m) => m.parsed.subject?.split(':')[0]);

  const level = async () =>
    (await client.call('GET', `/events/subscriptions/${subscriptionId}/position`)).body.alertLevel as string;
  const lines = (msg: string) =>
    platform.logLines().filter((l) => l.msg === msg && l.subscriptionId === subscriptionId);

  it('announces info after a minute, warning after five, critical after fifteen, each once', async () => {
    await client.call('POST', '/events/publish', {
      topic: `platform.${mod.slug}.events`,
      type: `${mod.slug}.job.ran`,
      payload: { fail: true },
    });
    await eventually(async () => {
      const { rows } = await platform.kernel.db.query<{ attempts: number }>(
        'SELECT max(attempts) AS attempts FROM events.cursors WHERE subscription_id = $1',
        [subscriptionId],
      );
      return rows[0]!.attempts === 1;
    });
    await checkLag(platform.kernel);
    expect(await level()).toBe('ok');

    clock.advance(2 * 60_000);
    await checkLag(platform.kernel);
    expect(await level()).toBe('info');
    expect(lines('consumer lag over 1 minute')).toHaveLength(1);
    expect(alertsMailed()).toEqual([]);

    clock.advance(4 * 60_000);
    await checkLag(platform.kernel);
    await checkLag(platform.kernel);
    expect(await level()).toBe('warning');
    expect(lines('consumer lag warning (over 5 minutes)')).toHaveLength(1);
    await eventually(async () => alertsMailed().length === 1);
    expect(alertsMailed()).toEqual(['Warning']);

    clock.advance(10 * 60_000);
    await checkLag(platform.kernel);
    expect(await level()).toBe('critical');
    expect(lines('consumer lag critical (over 15 minutes)')).toHaveLength(1);
    await eventually(async () => alertsMailed().length === 2);
    expect(alertsMailed()).toEqual(['Warning', 'Critical']);
    const position = (await client.call('GET', `/events/subscriptions/${subscriptionId}/position`)).body;
    expect(position.totalLag).toBe(1);
    expect(position.lagSeconds).toBeGreaterThanOrEqual(16 * 60);
  });
});
