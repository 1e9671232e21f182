import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient, Body, Receiver, RegisteredModule } from '../../support/events';
import {
  EVENTS_TEST_ENV,
  eventually,
  moduleClient,
  registerModule,
  startReceiver,
  uniqueSlug,
  userClient,
} from '../../support/events';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import { SPLIT } from '../../support/topology';

/**
 * The event bus over HTTP (spec 002, Event bus; issue 15), the same suite on the embedded
 * PostgreSQL log and on Kafka (the split run: Kafka, separate role processes).
 */
const logs: { name: string; kafka: boolean }[] = SPLIT
  ? [{ name: 'Kafka (split roles)', kafka: true }]
  : [
      { name: 'the embedded log', kafka: false },
      { name: 'Kafka', kafka: true },
    ];

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe.each(logs)('the event bus on $name', ({ kafka }) => {
  let platform: TestPlatform;
  let receiver: Receiver;
  let crm: RegisteredModule;
  let other: RegisteredModule;
  let crmA: ApiClient;
  let crmB: ApiClient;
  let otherA: ApiClient;
  let userA: ApiClient;
  let subA: string;
  const tenantA = randomUUID();
  const tenantB = randomUUID();
  const deliveredTo = (tenantId: string) => receiver.received.filter((d: Body) => d.event.tenantId === tenantId);

  beforeAll(async () => {
    platform = await startTestPlatform({ modules: ['events'], kafka, env: EVENTS_TEST_ENV });
    receiver = await startReceiver();
    const slug = uniqueSlug('crm');
    crm = await registerModule(
      platform,
      {
        slug,
        version: '1.0.0',
        name: 'CRM',
        events: {
          publishes: [`${slug}.contact.created`, `${slug}.contact.updated`],
          subscribes: [`platform.${slug}.events`],
          endpoint: receiver.url,
        },
      },
      [tenantA, tenantB],
    );
    other = await registerModule(
      platform,
      { slug: uniqueSlug('oth'), version: '1.0.0', events: { publishes: [], subscribes: [] } },
      [tenantA],
    );
    crmA = moduleClient(platform, crm, tenantA);
    crmB = moduleClient(platform, crm, tenantB);
    otherA = moduleClient(platform, other, tenantA);
    userA = userClient(platform, tenantA);
    const created = await crmA.call('POST', '/events/subscriptions', {
      topic: `platform.${crm.slug}.events`,
      consumerGroup: `${crm.slug}.contacts`,
      handlerName: 'contacts',
    });
    expect(created.status).toBe(201);
    subA = created.body.id as string;
  });
  afterAll(async () => {
    await platform?.close();
    await receiver?.close();
  });

  const topic = () => `platform.${crm.slug}.events`;
  const type = (verb = 'created') => `${crm.slug}.contact.${verb}`;

  describe('publishing', () => {
    it("answers 202 queued with a UUID v7 eventId; the event carries the module as source, the tenant of the key and the request's trace", async () => {
      const res = await crmA.call('POST', '/events/publish', {
        topic: topic(),
        type: type(),
        payload: { name: 'Ada' },
        entityId: 'contact-1',
      });
      expect(res.status).toBe(202);
      expect(res.body).toEqual({
        eventId: expect.stringMatching(UUID_V7),
        topic: topic(),
        type: type(),
        status: 'queued',
        createdAt: expect.any(String),
      });
      const got = await eventually(async () =>
        receiver.received.find((d: Body) => d.event.eventId === res.body.eventId),
      );
      expect(got.event).toMatchObject({
        type: type(),
        source: crm.slug,
        tenantId: tenantA,
        entityId: 'contact-1',
        payload: { name: 'Ada' },
        schemaVersion: '1.0.0',
      });
      expect(got.event.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(got.signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    });

    it('refuses types outside the manifest, platform prefixes and a user publishing for a module with 403 events.publish.forbidden', async () => {
      const refused = [
        await crmA.call('POST', '/events/publish', {
          topic: topic(),
          type: `${crm.slug}.contact.deleted`,
          payload: {},
        }),
        await crmA.call('POST', '/events/publish', {
          topic: 'platform.money.events',
          type: 'money.wallet.credited',
          payload: {},
        }),
        await crmA.call('POST', '/events/publish', {
          topic: 'platform.auth.events',
          type: 'auth.user.created',
          payload: {},
        }),
        await userA.call('POST', '/events/publish', {
          topic: 'platform.billing.events',
          type: 'billing.plan.changed',
          payload: {},
        }),
        await userA.call('POST', '/events/publish', { topic: topic(), type: type(), payload: {} }),
        await otherA.call('POST', '/events/publish', { topic: topic(), type: type(), payload: {} }),
      ];
      for (const res of refused) {
        expect(res.status).toBe(403);
        expect(res.body.type).toMatch(/\/events\.publish\.forbidden$/);
      }
      expect(
        (
          await userA.call('POST', '/events/publish', {
            topic: 'platform.app.events',
            type: 'app.order.placed',
            payload: { total: 3 },
          })
        ).status,
      ).toBe(202);
    });

    it('refuses 501 events with 400 batch-limit-exceeded, a payload over 1 MB with 413, one bad event with 400, publishing none of them', async () => {
      const entityId = `batch-refused-${randomUUID()}`;
      const over = await crmA.call('POST', '/events/publish/batch', {
        topic: topic(),
        events: Array.from({ length: 501 }, () => ({ type: type(), payload: {}, entityId })),
      });
      expect(over.status).toBe(400);
      expect(over.body.type).toMatch(/\/batch-limit-exceeded$/);
      const big = await crmA.call('POST', '/events/publish/batch', {
        topic: topic(),
        events: [
          { type: type(), payload: {}, entityId },
          { type: type(), payload: { blob: 'x'.repeat(1_048_600) }, entityId },
        ],
      });
      expect(big.status).toBe(413);
      const bad = await crmA.call('POST', '/events/publish/batch', {
        topic: topic(),
        events: [
          { type: type(), payload: {}, entityId },
          { type: 'nope', payload: {}, entityId },
        ],
      });
      expect(bad.status).toBe(400);
      expect(bad.body.errors[0].field).toMatch(/^events\.1\./);
      const single = await crmA.call('POST', '/events/publish', {
        topic: topic(),
        type: type(),
        payload: { blob: 'x'.repeat(1_048_600) },
        entityId,
      });
      expect(single.status).toBe(413);
      // a marker published after them arrives; none of the refused ones did
      const marker = await crmA.call('POST', '/events/publish', {
        topic: topic(),
        type: type(),
        payload: {},
        entityId,
      });
      await eventually(async () => receiver.received.some((d: Body) => d.event.eventId === marker.body.eventId));
      expect(receiver.received.filter((d: Body) => d.event.entityId === entityId)).toHaveLength(1);
    });
  });

  describe('subscriptions', () => {
    it("refuses a topic outside the manifest's subscribes, and a user's token, with 403 events.subscribe.forbidden", async () => {
      for (const [client, t] of [
        [crmA, 'platform.money.events'],
        [otherA, topic()],
        [userA, topic()],
      ] as const) {
        const res = await client.call('POST', '/events/subscriptions', {
          topic: t,
          consumerGroup: `${crm.slug}.x`,
          handlerName: 'x',
        });
        expect(res.status).toBe(403);
        expect(res.body.type).toMatch(/\/events\.subscribe\.forbidden$/);
      }
    });

    it("delivers a tenant's events to its subscription only, in order per entity, and the position's lag falls to 0", async () => {
      const entityId = `order-${randomUUID()}`;
      const batch = await crmA.call('POST', '/events/publish/batch', {
        topic: topic(),
        events: Array.from({ length: 20 }, (_, i) => ({ type: type('updated'), payload: { i }, entityId })),
      });
      expect(batch.status).toBe(202);
      expect(batch.body.count).toBe(20);
      const forB = await crmB.call('POST', '/events/publish/batch', {
        topic: topic(),
        events: Array.from({ length: 5 }, (_, i) => ({ type: type('updated'), payload: { i }, entityId })),
      });
      expect(forB.status).toBe(202);
      const mine = await eventually(async () => {
        const got = receiver.received.filter(
          (d: Body) => d.event.entityId === entityId && d.event.tenantId === tenantA,
        );
        return got.length >= 20 ? got : null;
      });
      expect(mine.map((d: Body) => d.event.payload.i)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      const position = await eventually(async () => {
        const res = await crmA.call('GET', `/events/subscriptions/${subA}/position`);
        return res.status === 200 && res.body.totalLag === 0 ? res.body : null;
      });
      expect(position).toMatchObject({
        subscriptionId: subA,
        topic: topic(),
        consumerGroup: `${crm.slug}.contacts`,
        totalLag: 0,
      });
      expect(position.partitions.length).toBeGreaterThan(0);
      for (const p of position.partitions) expect(p.currentOffset).toBe(p.logEndOffset);
      await new Promise((r) => setTimeout(r, 300));
      expect(deliveredTo(tenantB)).toEqual([]);
    });

    it("never shows tenant A's subscription, position or list to tenant B", async () => {
      expect((await crmB.call('GET', `/events/subscriptions/${subA}`)).status).toBe(404);
      expect((await crmB.call('GET', `/events/subscriptions/${subA}/position`)).status).toBe(404);
      expect(
        (await crmB.call('POST', `/events/subscriptions/${subA}/seek`, { seekTo: new Date().toISOString() })).status,
      ).toBe(404);
      expect((await crmB.call('DELETE', `/events/subscriptions/${subA}`)).status).toBe(404);
      expect((await crmB.call('GET', '/events/subscriptions')).body.data).toEqual([]);
      expect((await crmA.call('GET', '/events/subscriptions')).body.data.map((s: Body) => s.id)).toEqual([subA]);
    });

    it('seeks to a time and delivers from there again; a seek beyond retention is 422 events.retention.exceeded', async () => {
      const entityId = `seek-${randomUUID()}`;
      const first = await crmA.call('POST', '/events/publish', {
        topic: topic(),
        type: type(),
        payload: { n: 1 },
        entityId,
      });
      await eventually(async () => receiver.received.some((d: Body) => d.event.eventId === first.body.eventId));
      await new Promise((r) => setTimeout(r, 50));
      const seekTo = new Date().toISOString();
      await new Promise((r) => setTimeout(r, 50));
      const second = await crmA.call('POST', '/events/publish', {
        topic: topic(),
        type: type(),
        payload: { n: 2 },
        entityId,
      });
      await eventually(async () => receiver.received.some((d: Body) => d.event.eventId === second.body.eventId));

      const sought = await crmA.call('POST', `/events/subscriptions/${subA}/seek`, { seekTo });
      expect(sought.status).toBe(202);
      await eventually(
        async () => receiver.received.filter((d: Body) => d.event.eventId === second.body.eventId).length === 2,
      );
      await new Promise((r) => setTimeout(r, 300));
      expect(receiver.received.filter((d: Body) => d.event.eventId === first.body.eventId)).toHaveLength(1);

      const tooOld = await crmA.call('POST', `/events/subscriptions/${subA}/seek`, { seekTo: '2000-01-01T00:00:00Z' });
      expect(tooOld.status).toBe(422);
      expect(tooOld.body.type).toMatch(/\/events\.retention\.exceeded$/);
    });
  });

  describe('the dead-letter queue', () => {
    it('dead-letters an event after 3 failed attempts; retry delivers it; resolved entries are skipped by replay-all; tenant B sees none', async () => {
      receiver.failMarked = true;
      const res = await crmA.call('POST', '/events/publish', {
        topic: topic(),
        type: type(),
        payload: { fail: true },
        entityId: `dlq-${randomUUID()}`,
      });
      const entry = await eventually(async () => {
        const list = await crmA.call('GET', `/events/dlq?status=pending&topic=${topic()}`);
        return list.body.data.find((d: Body) => d.eventId === res.body.eventId);
      });
      expect(entry).toMatchObject({
        topic: topic(),
        type: type(),
        payload: { fail: true },
        failureCount: 3,
        status: 'pending',
        createdAt: expect.any(String),
      });
      expect(entry.lastError).toMatch(/HTTP 500/);
      expect((await crmB.call('GET', '/events/dlq')).body.data).toEqual([]);
      expect((await crmB.call('GET', `/events/dlq/${entry.id}`)).status).toBe(404);
      expect((await crmB.call('POST', `/events/dlq/${entry.id}/retry`)).status).toBe(404);

      receiver.failMarked = false;
      const retried = await crmA.call('POST', `/events/dlq/${entry.id}/retry`);
      expect(retried.status).toBe(202);
      expect(retried.body.status).toBe('retrying');
      await eventually(async () => receiver.received.some((d: Body) => d.event.eventId === res.body.eventId));
      await eventually(async () => (await crmA.call('GET', `/events/dlq/${entry.id}`)).body.status === 'resolved');
      const replay = await crmA.call('POST', '/events/dlq/replay-all', {});
      expect(replay.status).toBe(202);
      expect(replay.body).toEqual({ replayed: 0, skipped_already_resolved: expect.any(Number) });
      expect(replay.body.skipped_already_resolved).toBeGreaterThanOrEqual(1);
    });
  });

  describe('topics', () => {
    it("lists a module's own and subscribed topics only; a user sees the platform's; schema and config answer", async () => {
      const mine = await crmA.call('GET', '/events/topics?page_size=100');
      expect(mine.status).toBe(200);
      expect(mine.body.data.map((t: Body) => t.topic)).toEqual([topic()]);
      expect(mine.body.data[0]).toMatchObject({
        domain: crm.slug,
        partitions: expect.any(Number),
        retention: expect.stringMatching(/^\d+h$/),
        examples: expect.any(Array),
      });
      const all = await userA.call('GET', '/events/topics?page_size=100');
      expect(all.body.data.map((t: Body) => t.topic)).toEqual(
        expect.arrayContaining(['platform.money.events', 'platform.auth.events', topic()]),
      );
      expect((await crmA.call('GET', '/events/topics/platform.money.events/schema')).status).toBe(404);
      const schema = await crmA.call('GET', `/events/topics/${topic()}/schema`);
      expect(schema.body).toMatchObject({
        topic: topic(),
        schemaVersion: '1.0.0',
        breakingChangesPolicy: 'BACKWARD',
        protoDefinition: expect.stringContaining('message Event'),
      });
      const config = await userA.call('GET', '/events/topics/platform.audit.events/config');
      expect(config.body).toMatchObject({
        topic: 'platform.audit.events',
        retention: expect.stringMatching(/^\d+h$/),
        partitions: expect.any(Number),
      });
      expect(Number(config.body.retention.slice(0, -1))).toBeGreaterThanOrEqual(720);
    });

    it('registers a schema, accepts a compatible change and refuses a breaking one with 409', async () => {
      const v1 = `syntax = "proto3";\npackage crm;\nmessage Contact { string id = 1; string name = 2; }\n`;
      expect(
        (await crmA.call('PUT', `/events/topics/${topic()}/schema`, { protoDefinition: v1, schemaVersion: '1.0.0' }))
          .status,
      ).toBe(200);
      const v11 = `syntax = "proto3";\npackage crm;\nmessage Contact { string id = 1; string name = 2; string email = 3; }\n`;
      expect(
        (await crmA.call('PUT', `/events/topics/${topic()}/schema`, { protoDefinition: v11, schemaVersion: '1.1.0' }))
          .status,
      ).toBe(200);
      const breaking = `syntax = "proto3";\npackage crm;\nmessage Contact { string id = 1; int64 name = 2; }\n`;
      const refused = await crmA.call('PUT', `/events/topics/${topic()}/schema`, {
        protoDefinition: breaking,
        schemaVersion: '2.0.0',
      });
      expect(refused.status).toBe(409);
      expect(refused.body.errors.map((e: Body) => e.code)).toEqual(
        expect.arrayContaining(['FIELD_TYPE_CHANGED', 'FIELD_REMOVED']),
      );
      expect((await crmA.call('GET', `/events/topics/${topic()}/schema`)).body.schemaVersion).toBe('1.1.0');
      expect(
        (await otherA.call('PUT', `/events/topics/${topic()}/schema`, { protoDefinition: v11, schemaVersion: '1.2.0' }))
          .status,
      ).toBe(403);
    });
  });
});
