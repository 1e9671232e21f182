import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configureNotify } from '../../../commands/notify/context';
import { fixedClock } from '../../../infra/runtime/clock';
import { deliveryWorker } from '../../../workers/notify';
import { testToken } from '../../support/auth';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import { eventsOf, notifyClient, notifyHttpServices, seedMember } from '../../support/notify';
import { openSession } from '../../support/socket-client';

/**
 * A websocket notification is delivered by the transaction that accepts it (commands/notify/live.ts)
 * when its tenant has nothing pending and the rate windows admit it: the platform here runs no
 * delivery worker, so whatever arrives was delivered at acceptance. Over the window, or behind
 * anything pending, it is queued as before and the workers deliver it, in order.
 */
const clock = fixedClock(new Date('2026-05-04T09:00:00.000Z'));
let platform: TestPlatform;

beforeAll(async () => {
  platform = await startTestPlatform({ services: notifyHttpServices, clock });
  configureNotify(platform.kernel, { settings: { pollIntervalMs: 20, ratePerTenant: 3 } });
});
afterAll(async () => platform?.close());

const status = async (tenantId: string, id: string): Promise<string> =>
  (await notifyClient(platform.url, tenantId).get(`/notify/${id}`)).body.status as string;

const send = async (tenantId: string, userId: string, subject: string): Promise<string> => {
  const res = await notifyClient(platform.url, tenantId).post('/notify', {
    channel: 'websocket',
    recipient: { userId },
    subject,
    body: 'x',
  });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  return res.body.notificationId as string;
};

describe('a websocket notification of a tenant with nothing pending', () => {
  it('is delivered by its accepting transaction: the open socket gets it with no worker running, the history says delivered', async () => {
    // given a user online and no delivery worker
    await seedMember(platform.kernel.db, 'live', 'u-now');
    const client = await openSession(platform.url, testToken('live', 'u-now', []));
    try {
      // when a notification is accepted for them
      const id = await send('live', 'u-now', 'at once');
      // then it is delivered already: queued, sent and confirmed as one attempt, no queue row left behind
      const shown = (await notifyClient(platform.url, 'live').get(`/notify/${id}`)).body;
      expect(shown).toMatchObject({ status: 'delivered', sentAt: expect.any(String), deliveredAt: expect.any(String) });
      expect((await eventsOf(platform.kernel.db, 'live', id)).map((e) => e.type)).toEqual([
        'notify.notification.queued',
        'notify.notification.sending',
        'notify.notification.sent',
      ]);
      const { rowCount } = await platform.kernel.db.query(`SELECT 1 FROM notify.deliveries WHERE tenant_id = 'live'`);
      expect(rowCount).toBe(0);
      // and it reaches the socket once
      await client.waitFor((m) => m.some((x) => x.notification_id === id), 'the live notification');
      expect(client.notifications().map((m) => m.notification_id)).toEqual([id]);
    } finally {
      await client.close();
    }
  });
});

describe('a tenant over its window', () => {
  it('gets the rest queued, and after the minute what is pending keeps the next one queued; the worker delivers them in order', async () => {
    // given a user online and a window of 3 a minute
    await seedMember(platform.kernel.db, 'paced', 'u-paced');
    const token = testToken('paced', 'u-paced', []);
    const client = await openSession(platform.url, token);
    const worker = deliveryWorker(platform.kernel);
    try {
      // when five are sent within the minute
      const ids: string[] = [];
      for (let i = 0; i < 5; i += 1) ids.push(await send('paced', 'u-paced', `n${i}`));
      // then three are delivered at once and two wait in the queue
      expect(await Promise.all(ids.map((id) => status('paced', id)))).toEqual([
        'delivered',
        'delivered',
        'delivered',
        'queued',
        'queued',
      ]);
      await client.waitFor((m) => m.filter((x) => x.type === 'notification').length === 3, 'the first three');

      // when the next minute begins and another is sent, it may not overtake the two pending
      clock.advance(60_000);
      ids.push(await send('paced', 'u-paced', 'n5'));
      expect(await status('paced', ids[5]!)).toBe('queued');

      // then the worker delivers the three, and the socket has all six in the order they were sent
      while (await worker.step()) {
        /* until nothing is due */
      }
      await client.waitFor((m) => m.filter((x) => x.type === 'notification').length === 6, 'all six');
      expect(client.notifications().map((m) => m.notification_id)).toEqual(ids);
      expect(await Promise.all(ids.map((id) => status('paced', id)))).toEqual(ids.map(() => 'delivered'));

      // and a reconnecting client replays them in that order too
      const again = await openSession(platform.url, token);
      try {
        expect(again.notifications().map((m) => m.notification_id)).toEqual(ids);
      } finally {
        await again.close();
      }
    } finally {
      await worker.stop();
      await client.close();
    }
  });
});
