import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkLag } from '../../../commands/events/lag';
import { offsetClock } from '../../support/clock';
import type { ApiClient, Receiver, RegisteredModule } from '../../support/events';
import {
  EVENTS_TEST_ENV,
  eventually,
  moduleClient,
  registerModule,
  startReceiver,
  uniqueSlug,
} from '../../support/events';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

/**
 * Consumer lag alerts (spec 002: over 1 minute info, over 5 warning, over 15 critical): an event
 * whose handler failed waits for its retry an hour later, so its subscription falls behind while
 * the test moves the clock; each level is announced once, and the position shows it.
 */
describe('consumer lag alerts', () => {
  const clock = offsetClock();
  let platform: TestPlatform;
  let receiver: Receiver;
  let mod: RegisteredModule;
  let client: ApiClient;
  let subscriptionId: string;
  const tenantId = randomUUID();

  beforeAll(async () => {
    platform = await startTestPlatform({
      role: 'all',
      modules: ['events'],
      clock,
      captureLogs: true,
      env: { ...EVENTS_TEST_ENV, EVENTS_RETRY_BACKOFF_MS: '3600000', EVENTS_LAG_CHECK_INTERVAL_MS: '3600000' },
    });
    receiver = await startReceiver();
    const slug = uniqueSlug('lag');
    mod = await registerModule(
      platform,
      {
        slug,
        version: '1.0.0',
        events: { publishes: [`${slug}.job.ran`], subscribes: [`platform.${slug}.events`], endpoint: receiver.url },
      },
      [tenantId],
    );
    client = moduleClient(platform, mod, tenantId);
    subscriptionId = (
      await client.call('POST', '/events/subscriptions', {
        topic: `platform.${slug}.events`,
        consumerGroup: `${slug}.jobs`,
        handlerName: 'jobs',
      })
    ).body.id as string;
  });
  afterAll(async () => {
    await platform?.close();
    await receiver?.close();
  });

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

    clock.advance(4 * 60_000);
    await checkLag(platform.kernel);
    await checkLag(platform.kernel);
    expect(await level()).toBe('warning');
    expect(lines('consumer lag warning (over 5 minutes)')).toHaveLength(1);

    clock.advance(10 * 60_000);
    await checkLag(platform.kernel);
    expect(await level()).toBe('critical');
    expect(lines('consumer lag critical (over 15 minutes)')).toHaveLength(1);
    const position = (await client.call('GET', `/events/subscriptions/${subscriptionId}/position`)).body;
    expect(position.totalLag).toBe(1);
    expect(position.lagSeconds).toBeGreaterThanOrEqual(16 * 60);
  });
});
