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
    platform = await startTestPlatform({ services: ['events'], kafka, env: EVENTS_TEST_ENV });
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

  /** given a refusal: 403 with the suffix */
  const expectRefused = (res: { status: number; body: Body }, suffix: string) => {
    expect(res.status).toBe(403);
    expect(res.body.type).toMatch(new RegExp(`/${suffix.replace(/\./g, '\\.')}$`));
  };
  const publish = (client: ApiClient, body: Body) => client.call('POST', '/events/publish', body);
  const arrived = (eventId: string) =>
    eventually(async () => receiver.received.find((d: Body) => d.event.eventId === eventId));

  describe('publishing', () => {
    it('answers 202 queued with a UUID v7 eventId', async () => {
      const res = await publish(crmA, { topic: topic(), type: type(), payload: {}, entityId: 'contact-0' });
      expect(res.status).toBe(202);
      expect(res.body).toEqual({
        eventId: expect.stringMatching(UUID_V7),
        topic: topic(),
        type: type(),
        status: 'queued',
        createdAt: expect.any(String),
      });
    });

    it("delivers the event signed, with the module as source, the tenant of the key and the request's trace", async () => {
      const res = await publish(crmA, {
        topic: topic(),
        type: type(),
        payload: { name: 'Ada' },
        entityId: 'contact-1',
      });
      const got = await arrived(res.body.eventId);
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

    it("refuses a type outside the module's manifest with 403 events.publish.forbidden", async () =>
      expectRefused(
        await publish(crmA, { topic: topic(), type: `${crm.slug}.contact.deleted`, payload: {} }),
        'events.publish.forbidden',
      ));

    it.each([
      ['platform.money.events', 'money.wallet.credited'],
      ['platform.auth.events', 'auth.user.created'],
    ])('refuses a module publishing to %s (a platform prefix) with 403', async (t, ty) =>
      expectRefused(await publish(crmA, { topic: t, type: ty, payload: {} }), 'events.publish.forbidden'),
    );

    it("refuses a user's token publishing billing. or a module's type, with 403", async () => {
      expectRefused(
        await publish(userA, { topic: 'platform.billing.events', type: 'billing.plan.changed', payload: {} }),
        'events.publish.forbidden',
      );
      expectRefused(await publish(userA, { topic: topic(), type: type(), payload: {} }), 'events.publish.forbidden');
    });

    it("refuses another module publishing the module's type with 403", async () =>
      expectRefused(await publish(otherA, { topic: topic(), type: type(), payload: {} }), 'events.publish.forbidden'));

    it("accepts a user's app.* event", async () =>
      expect(
        (await publish(userA, { topic: 'platform.app.events', type: 'app.order.placed', payload: { total: 3 } }))
          .status,
      ).toBe(202));

    describe('refused batches and events', () => {
      const entityId = `batch-refused-${randomUUID()}`;
      const batch = (events: Body[]) => crmA.call('POST', '/events/publish/batch', { topic: topic(), events });

      it('501 events: 400 batch-limit-exceeded', async () => {
        const over = await batch(Array.from({ length: 501 }, () => ({ type: type(), payload: {}, entityId })));
        expect(over.status).toBe(400);
        expect(over.body.type).toMatch(/\/batch-limit-exceeded$/);
      });
      it('a batch holding a payload over 1 MB: 413', async () =>
        expect(
          (
            await batch([
              { type: type(), payload: {}, entityId },
              { type: type(), payload: { blob: 'x'.repeat(1_048_600) }, entityId },
            ])
          ).status,
        ).toBe(413));
      it('a batch holding one bad event: 400 naming it', async () => {
        const bad = await batch([
          { type: type(), payload: {}, entityId },
          { type: 'nope', payload: {}, entityId },
        ]);
        expect(bad.status).toBe(400);
        expect(bad.body.errors[0].field).toMatch(/^events\.1\./);
      });
      it('a single event over 1 MB: 413', async () =>
        expect(
          (await publish(crmA, { topic: topic(), type: type(), payload: { blob: 'x'.repeat(1_048_600) }, entityId }))
            .status,
        ).toBe(413));
      it('publishes none of them: a marker published after them arrives alone', async () => {
        const marker = await publish(crmA, { topic: topic(), type: type(), payload: {}, entityId });
        await arrived(marker.body.eventId);
        expect(receiver.received.filter((d: Body) => d.event.entityId === entityId)).toHaveLength(1);
      });
    });
  });

  describe('subscriptions', () => {
    const subscribe = (client: ApiClient, t: string) =>
      client.call('POST', '/events/subscriptions', { topic: t, consumerGroup: `${crm.slug}.x`, handlerName: 'x' });

    it("refuses a topic outside the manifest's subscribes with 403 events.subscribe.forbidden", async () =>
      expectRefused(await subscribe(crmA, 'platform.money.events'), 'events.subscribe.forbidden'));
    it("refuses another module subscribing to the module's topic with 403", async () =>
      expectRefused(await subscribe(otherA, topic()), 'events.subscribe.forbidden'));
    it("refuses a user's token with 403", async () =>
      expectRefused(await subscribe(userA, topic()), 'events.subscribe.forbidden'));

    describe("given 20 events of tenant A's entity and 5 of tenant B's (which has no subscription)", () => {
      const entityId = `order-${randomUUID()}`;
      beforeAll(async () => {
        const updates = (n: number) =>
          Array.from({ length: n }, (_, i) => ({ type: type('updated'), payload: { i }, entityId }));
        const batch = await crmA.call('POST', '/events/publish/batch', { topic: topic(), events: updates(20) });
        expect(batch.status).toBe(202);
        expect(batch.body.count).toBe(20);
        const forB = await crmB.call('POST', '/events/publish/batch', { topic: topic(), events: updates(5) });
        expect(forB.status).toBe(202);
      });

      it("delivers tenant A's to its subscription, in order per entity", async () => {
        const mine = await eventually(async () => {
          const got = receiver.received.filter(
            (d: Body) => d.event.entityId === entityId && d.event.tenantId === tenantA,
          );
          return got.length >= 20 ? got : null;
        });
        expect(mine.map((d: Body) => d.event.payload.i)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      });
      it("the subscription's lag falls to 0 on every partition", async () => {
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
      });
      it("delivers none of tenant B's anywhere", async () => {
        // deliberately let time pass after A's were all consumed: an absence cannot be polled for
        await new Promise((r) => setTimeout(r, 300));
        expect(deliveredTo(tenantB)).toEqual([]);
      });
    });

    it.each([
      ['GET', '', undefined],
      ['GET', '/position', undefined],
      ['POST', '/seek', { seekTo: new Date().toISOString() }],
      ['DELETE', '', undefined],
    ] as const)("answers tenant B's %s of tenant A's subscription%s with 404", async (method, path, body) =>
      expect((await crmB.call(method, `/events/subscriptions/${subA}${path}`, body)).status).toBe(404),
    );

    it("lists each tenant's subscriptions only", async () => {
      expect((await crmB.call('GET', '/events/subscriptions')).body.data).toEqual([]);
      expect((await crmA.call('GET', '/events/subscriptions')).body.data.map((s: Body) => s.id)).toEqual([subA]);
    });

    it('seeks to a time and delivers from there again (the later event twice, the earlier once)', async () => {
      const entityId = `seek-${randomUUID()}`;
      const first = await publish(crmA, { topic: topic(), type: type(), payload: { n: 1 }, entityId });
      await arrived(first.body.eventId);
      // deliberately let the clock move on both sides of seekTo, so the two events fall either side of it
      await new Promise((r) => setTimeout(r, 50));
      const seekTo = new Date().toISOString();
      await new Promise((r) => setTimeout(r, 50));
      const second = await publish(crmA, { topic: topic(), type: type(), payload: { n: 2 }, entityId });
      await arrived(second.body.eventId);

      const sought = await crmA.call('POST', `/events/subscriptions/${subA}/seek`, { seekTo });
      expect(sought.status).toBe(202);
      await eventually(
        async () => receiver.received.filter((d: Body) => d.event.eventId === second.body.eventId).length === 2,
      );
      // deliberately let time pass after the redelivery: the earlier event must not come again (an absence)
      await new Promise((r) => setTimeout(r, 300));
      expect(receiver.received.filter((d: Body) => d.event.eventId === first.body.eventId)).toHaveLength(1);
    });

    it('refuses a seek beyond retention with 422 events.retention.exceeded', async () => {
      const tooOld = await crmA.call('POST', `/events/subscriptions/${subA}/seek`, { seekTo: '2000-01-01T00:00:00Z' });
      expect(tooOld.status).toBe(422);
      expect(tooOld.body.type).toMatch(/\/events\.retention\.exceeded$/);
    });
  });

  describe('the dead-letter queue, given an event its endpoint refuses', () => {
    let eventId: string;
    let entry: Body;
    beforeAll(async () => {
      receiver.failMarked = true;
      const res = await publish(crmA, {
        topic: topic(),
        type: type(),
        payload: { fail: true },
        entityId: `dlq-${randomUUID()}`,
      });
      eventId = res.body.eventId as string;
      entry = await eventually(async () => {
        const list = await crmA.call('GET', `/events/dlq?status=pending&topic=${topic()}`);
        return list.body.data.find((d: Body) => d.eventId === eventId);
      });
    });
    afterAll(() => {
      receiver.failMarked = false;
    });

    it('dead-letters it after 3 failed attempts, with the last error', () => {
      expect(entry).toMatchObject({
        topic: topic(),
        type: type(),
        payload: { fail: true },
        failureCount: 3,
        status: 'pending',
        createdAt: expect.any(String),
      });
      expect(entry.lastError).toMatch(/HTTP 500/);
    });
    it('tenant B sees none of it: an empty list, 404 on the entry and its retry', async () => {
      expect((await crmB.call('GET', '/events/dlq')).body.data).toEqual([]);
      expect((await crmB.call('GET', `/events/dlq/${entry.id}`)).status).toBe(404);
      expect((await crmB.call('POST', `/events/dlq/${entry.id}/retry`)).status).toBe(404);
    });
    it('a retry delivers it and resolves the entry', async () => {
      receiver.failMarked = false;
      const retried = await crmA.call('POST', `/events/dlq/${entry.id}/retry`);
      expect(retried.status).toBe(202);
      expect(retried.body.status).toBe('retrying');
      await arrived(eventId);
      await eventually(async () => (await crmA.call('GET', `/events/dlq/${entry.id}`)).body.status === 'resolved');
    });
    it('replay-all skips the resolved entries', async () => {
      await eventually(async () => (await crmA.call('GET', `/events/dlq/${entry.id}`)).body.status === 'resolved');
      const replay = await crmA.call('POST', '/events/dlq/replay-all', {});
      expect(replay.status).toBe(202);
      expect(replay.body).toEqual({ replayed: 0, skipped_already_resolved: expect.any(Number) });
      expect(replay.body.skipped_already_resolved).toBeGreaterThanOrEqual(1);
    });
  });

  describe('topics', () => {
    it("lists a module's own and subscribed topics only", async () => {
      const mine = await crmA.call('GET', '/events/topics?page_size=100');
      expect(mine.status).toBe(200);
      expect(mine.body.data.map((t: Body) => t.topic)).toEqual([topic()]);
      expect(mine.body.data[0]).toMatchObject({
        domain: crm.slug,
        partitions: expect.any(Number),
        retention: expect.stringMatching(/^\d+h$/),
        examples: expect.any(Array),
      });
    });
    it("shows a user the platform's topics", async () => {
      const all = await userA.call('GET', '/events/topics?page_size=100');
      expect(all.body.data.map((t: Body) => t.topic)).toEqual(
        expect.arrayContaining(['platform.money.events', 'platform.auth.events', topic()]),
      );
    });
    it("answers a module's own topic schema, and 404 for a topic it does not own", async () => {
      expect((await crmA.call('GET', '/events/topics/platform.money.events/schema')).status).toBe(404);
      const schema = await crmA.call('GET', `/events/topics/${topic()}/schema`);
      expect(schema.body).toMatchObject({
        topic: topic(),
        schemaVersion: '1.0.0',
        breakingChangesPolicy: 'BACKWARD',
        protoDefinition: expect.stringContaining('message Event'),
      });
    });
    it("answers a topic's config, retention at least 720 h", async () => {
      const config = await userA.call('GET', '/events/topics/platform.audit.events/config');
      expect(config.body).toMatchObject({
        topic: 'platform.audit.events',
        retention: expect.stringMatching(/^\d+h$/),
        partitions: expect.any(Number),
      });
      expect(Number(config.body.retention.slice(0, -1))).toBeGreaterThanOrEqual(720);
    });

    describe('schema registration', () => {
      const put = (client: ApiClient, protoDefinition: string, schemaVersion: string) =>
        client.call('PUT', `/events/topics/${topic()}/schema`, { protoDefinition, schemaVersion });
      const v11 = `syntax = "proto3";\npackage crm;\nmessage Contact { string id = 1; string name = 2; string email = 3; }\n`;

      it('registers a schema', async () => {
        const v1 = `syntax = "proto3";\npackage crm;\nmessage Contact { string id = 1; string name = 2; }\n`;
        expect((await put(crmA, v1, '1.0.0')).status).toBe(200);
      });
      it('accepts a compatible change', async () => expect((await put(crmA, v11, '1.1.0')).status).toBe(200));
      it('given publishes that remember the schema, when a newer one is registered, then the very next publish follows it', async () => {
        const publish = (schemaVersion: string) =>
          crmA.call('POST', '/events/publish', {
            topic: topic(),
            type: `${crm.slug}.contact.created`,
            payload: { id: 'c1' },
            schemaVersion,
          });
        expect((await publish('1.1.0')).status).toBe(202);
        const ahead = await publish('1.2.0');
        expect(ahead.status).toBe(400);
        expect(ahead.body.errors[0]).toMatchObject({ field: 'schemaVersion', code: 'UNKNOWN_SCHEMA_VERSION' });
        expect((await put(crmA, v11, '1.2.0')).status).toBe(200);
        expect((await publish('1.2.0')).status).toBe(202);
      });
      it('refuses a breaking one with 409 naming the changes, keeping the last version', async () => {
        const breaking = `syntax = "proto3";\npackage crm;\nmessage Contact { string id = 1; int64 name = 2; }\n`;
        const refused = await put(crmA, breaking, '2.0.0');
        expect(refused.status).toBe(409);
        expect(refused.body.errors.map((e: Body) => e.code)).toEqual(
          expect.arrayContaining(['FIELD_TYPE_CHANGED', 'FIELD_REMOVED']),
        );
        expect((await crmA.call('GET', `/events/topics/${topic()}/schema`)).body.schemaVersion).toBe('1.2.0');
      });
      it("refuses another module registering the topic's schema with 403", async () =>
        expect((await put(otherA, v11, '1.3.0')).status).toBe(403));
    });
  });
});
