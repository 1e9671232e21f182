import { describe, expect, it } from 'vitest';
import type { SchemaCommand } from '../../../domain/events/schema';
import { schemaDecider } from '../../../domain/events/schema';
import type { BusSubscriptionCommand } from '../../../domain/events/subscription';
import { busSubscriptionDecider } from '../../../domain/events/subscription';
import { commandScenario } from '../../support/decider-scenario';

const T0 = '2026-01-10T12:00:00.000Z';

describe('a bus subscription', () => {
  const { given } = commandScenario(busSubscriptionDecider);
  const create: BusSubscriptionCommand = {
    type: 'CreateSubscription',
    data: {
      subscriptionId: 's1',
      topic: 'crm.contacts',
      consumerGroup: 'g1',
      handlerName: 'h',
      source: 'crm',
      delivery: 'webhook',
      dedup: true,
      createdAt: T0,
    },
  };
  const remove: BusSubscriptionCommand = { type: 'DeleteSubscription', deletedAt: T0 };
  const seek: BusSubscriptionCommand = {
    type: 'SeekSubscription',
    seekTo: 'earliest',
    soughtAt: T0,
    offsets: { '0': 3 },
  };

  it('is created once: events.subscription.created; created again changes nothing', () => {
    given()
      .when(create)
      .then((events, after) => {
        expect(events).toEqual([{ type: 'events.subscription.created', data: create.data }]);
        expect(after).toMatchObject({ status: 'active', subscriptionId: 's1', topic: 'crm.contacts' });
      });
    given(create).when(create).then([]);
  });
  it('an active one is sought to the given offsets, any number of times', () =>
    given(create, seek)
      .when(seek)
      .then([
        {
          type: 'events.subscription.sought',
          data: { subscriptionId: 's1', seekTo: 'earliest', soughtAt: T0, offsets: { '0': 3 } },
        },
      ]));
  it('is deleted once; deleting again changes nothing', () => {
    given(create)
      .when(remove)
      .then((events, after) => {
        expect(events).toEqual([
          { type: 'events.subscription.deleted', data: { subscriptionId: 's1', deletedAt: T0 } },
        ]);
        expect(after.status).toBe('deleted');
      });
    given(create, remove).when(remove).then([]);
  });
  it('a missing or deleted one cannot be sought, and a missing one not deleted: 404 subscription-not-found', () => {
    given().when(seek).thenFails('subscription-not-found', 404);
    given(create, remove).when(seek).thenFails('subscription-not-found', 404);
    given().when(remove).thenFails('subscription-not-found', 404);
  });
});

describe("a topic's schema", () => {
  const { given } = commandScenario(schemaDecider);
  const register = (schemaVersion: string): SchemaCommand => ({
    type: 'RegisterSchema',
    data: {
      topic: 'crm.contacts',
      schemaVersion,
      protoDefinition: `syntax = "proto3"; // ${schemaVersion}`,
      breakingChangesPolicy: 'BACKWARD',
      registeredBy: 'u1',
      registeredAt: T0,
    },
  });
  it('records each registration as a version, in order (compatibility is checked before, by the command)', () =>
    given(register('1.0.0'))
      .when(register('1.1.0'))
      .then((events, after) => {
        expect(events).toEqual([{ type: 'events.schema.registered', data: register('1.1.0').data }]);
        expect(after.versions.map((v) => v.schemaVersion)).toEqual(['1.0.0', '1.1.0']);
      }));
});
