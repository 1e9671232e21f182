import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HandlerContext } from '../../../commands/events/context';
import { registerEventHandler } from '../../../commands/events/context';
import { createInProcessSubscription } from '../../../commands/events/subscriptions';
import type { EventView } from '../../../domain/events/views';
import { EVENTS_TEST_ENV, eventually, userClient } from '../../support/events';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

/**
 * A platform service consuming in process (docs/decisions.md, Event bus): same order, retries and
 * tenant scoping as webhooks; a deduplicating subscription runs its handler in the transaction that
 * records the event processed, so a record the log carries twice is handled once.
 */
describe.each([
  { name: 'the embedded log', kafka: false },
  { name: 'Kafka', kafka: true },
])('an in-process subscription on $name', ({ kafka }) => {
  let platform: TestPlatform;
  const tenantA = randomUUID();
  const tenantB = randomUUID();
  const handled: { event: EventView; ctx: HandlerContext }[] = [];
  const failedOnce = new Set<string>();

  beforeAll(async () => {
    platform = await startTestPlatform({ role: 'all', services: ['events'], kafka, env: EVENTS_TEST_ENV });
    registerEventHandler(platform.kernel, 'app-orders', async (event, ctx) => {
      if (event.payload.failOnce === true && !failedOnce.has(event.eventId)) {
        failedOnce.add(event.eventId);
        throw new Error('not yet');
      }
      expect(ctx.tx).not.toBeNull();
      await ctx.tx!.query('SELECT 1');
      handled.push({ event, ctx });
    });
    const meta = { tenantId: tenantA, actorId: 'billing', traceId: null, correlationId: null, causationId: null };
    await platform.kernel.commands.run(meta, (uow) =>
      createInProcessSubscription(platform.kernel, uow, 'billing', {
        topic: 'platform.app.events',
        consumerGroup: 'billing.app-orders',
        handlerName: 'app-orders',
        dedup: true,
      }),
    );
  });
  afterAll(async () => platform?.close());

  it("hands the tenant's events to the handler in order, retries a failure, and handles a duplicate record once", async () => {
    const a = userClient(platform, tenantA);
    const b = userClient(platform, tenantB);
    const entityId = `order-${randomUUID()}`;
    const ids: string[] = [];
    for (const payload of [{ n: 1 }, { n: 2, failOnce: true }, { n: 3 }]) {
      const res = await a.call('POST', '/events/publish', {
        topic: 'platform.app.events',
        type: 'app.order.placed',
        payload,
        entityId,
      });
      expect(res.status).toBe(202);
      ids.push(res.body.eventId as string);
    }
    expect(
      (
        await b.call('POST', '/events/publish', {
          topic: 'platform.app.events',
          type: 'app.order.placed',
          payload: { n: 99 },
          entityId,
        })
      ).status,
    ).toBe(202);
    await eventually(async () => handled.filter((h) => h.event.entityId === entityId).length >= 3);
    const mine = handled.filter((h) => h.event.entityId === entityId);
    expect(mine.map((h) => h.event.payload.n)).toEqual([1, 2, 3]);
    expect(mine.every((h) => h.event.tenantId === tenantA && h.event.source === 'app')).toBe(true);
    expect(mine[1]!.ctx.attempt).toBe(2);

    // the log carries the first event again (a relay that crashed between publish and delete)
    const { rows } = await platform.kernel.db.query<{ value: string }>(
      'SELECT value FROM events.records WHERE topic = $1 AND event_id = $2',
      ['platform.app.events', ids[0]],
    );
    await platform.kernel.log.publish('platform.app.events', [{ key: entityId, value: rows[0]!.value }]);
    const marker = await a.call('POST', '/events/publish', {
      topic: 'platform.app.events',
      type: 'app.order.placed',
      payload: { n: 4 },
      entityId,
    });
    await eventually(async () => handled.some((h) => h.event.eventId === marker.body.eventId));
    expect(handled.filter((h) => h.event.eventId === ids[0])).toHaveLength(1);
    expect(handled.some((h) => h.event.tenantId === tenantB)).toBe(false);
  });
});
