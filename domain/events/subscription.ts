import type { Decider } from '../shared/decider';
import { assertNever } from '../shared/decider';
import { eventErrors } from './errors';
import type { BusSubscriptionCreatedData, BusSubscriptionEvent } from './events';

/** A subscription of a tenant to a topic: created, sought any number of times, deleted once. */
export type BusSubscription =
  | { status: 'none' }
  | { status: 'active' | 'deleted'; subscriptionId: string; topic: string; consumerGroup: string; source: string };

export type BusSubscriptionCommand =
  | { type: 'CreateSubscription'; data: BusSubscriptionCreatedData }
  | { type: 'DeleteSubscription'; deletedAt: string }
  | { type: 'SeekSubscription'; seekTo: string; soughtAt: string; offsets: Record<string, number> };

export const busSubscriptionDecider: Decider<BusSubscription, BusSubscriptionCommand, BusSubscriptionEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve: (s, e) => {
    switch (e.type) {
      case 'events.subscription.created':
        return {
          status: 'active',
          subscriptionId: e.data.subscriptionId,
          topic: e.data.topic,
          consumerGroup: e.data.consumerGroup,
          source: e.data.source,
        };
      case 'events.subscription.deleted':
        return s.status === 'none' ? s : { ...s, status: 'deleted' };
      case 'events.subscription.sought':
        return s;
      default:
        return assertNever(e);
    }
  },
  decide: (c, s) => {
    switch (c.type) {
      case 'CreateSubscription':
        return s.status === 'none' ? [{ type: 'events.subscription.created', data: c.data }] : [];
      case 'DeleteSubscription':
        if (s.status === 'none') throw eventErrors.subscriptionNotFound();
        return s.status === 'deleted'
          ? []
          : [
              {
                type: 'events.subscription.deleted',
                data: { subscriptionId: s.subscriptionId, deletedAt: c.deletedAt },
              },
            ];
      case 'SeekSubscription':
        if (s.status !== 'active') throw eventErrors.subscriptionNotFound();
        return [
          {
            type: 'events.subscription.sought',
            data: { subscriptionId: s.subscriptionId, seekTo: c.seekTo, soughtAt: c.soughtAt, offsets: c.offsets },
          },
        ];
      default:
        return assertNever(c);
    }
  },
};
