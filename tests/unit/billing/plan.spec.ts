import { describe, expect, it } from 'vitest';
import type { PlanCommand, PlanSnapshot } from '../../../domain/billing/plan';
import { FREE_PLAN, planDecider } from '../../../domain/billing/plan';
import { commandScenario } from '../../support/decider-scenario';

/** the plan decider: created once, seeded once, updated as a whole snapshot (spec 001 billing.plan.changed) */
const { given } = commandScenario(planDecider);
const T0 = '2026-01-10T12:00:00.000Z';
const T1 = '2026-01-11T12:00:00.000Z';
const pro = { ...FREE_PLAN, id: 'p-pro', name: 'pro', priceCents: 4900 };
const create = (plan: Omit<PlanSnapshot, 'isActive' | 'createdAt' | 'updatedAt'> = pro): PlanCommand => ({
  type: 'CreatePlan',
  plan,
  now: T0,
});
const update = (patch: Extract<PlanCommand, { type: 'UpdatePlan' }>['patch'], hasActiveSubscribers = false) =>
  ({ type: 'UpdatePlan', patch, now: T1, hasActiveSubscribers }) satisfies PlanCommand;

describe('a new plan', () => {
  it('is created active, with its limits changed (every consumer recomputes)', () =>
    given()
      .when(create())
      .then((events, after) => {
        expect(events).toEqual([
          {
            type: 'billing.plan.changed',
            data: {
              change: 'created',
              planId: 'p-pro',
              plan: { ...pro, isActive: true, createdAt: T0, updatedAt: T0 },
              limitsChanged: true,
            },
          },
        ]);
        expect(after).toMatchObject({ status: 'exists', name: 'pro', isActive: true });
      }));
  it('a second creation of the same plan is 409 conflict', () =>
    given(create()).when(create()).thenFails('conflict', 409));
  it('the seeded free plan is created once; a later start changes nothing', () => {
    given()
      .when({ type: 'SeedPlan', plan: FREE_PLAN, now: T0 })
      .then((events) => expect(events.map((e) => e.data.change)).toEqual(['created']));
    given({ type: 'SeedPlan', plan: FREE_PLAN, now: T0 })
      .when({ type: 'SeedPlan', plan: { ...FREE_PLAN, priceCents: 1 }, now: T1 })
      .then([]);
  });
  it('cannot be updated before it exists: 404 not-found', () =>
    given()
      .when(update({ name: 'x' }))
      .thenFails('not-found', 404));
});

describe('an update', () => {
  it('carries the whole plan after the change, its new updatedAt, and says whether the limits changed', () => {
    given(create())
      .when(update({ priceCents: 5900 }))
      .then((events) =>
        expect(events[0]?.data).toMatchObject({
          change: 'updated',
          plan: { priceCents: 5900, name: 'pro', createdAt: T0, updatedAt: T1 },
          limitsChanged: false,
        }),
      );
    given(create())
      .when(update({ limits: { ...pro.limits, users: 99 } }))
      .then((events) =>
        expect(events[0]?.data).toMatchObject({ limitsChanged: true, plan: { limits: { users: 99 } } }),
      );
  });
  it('that changes nothing records nothing', () =>
    given(create())
      .when(update({ name: 'pro', limits: { ...pro.limits } }))
      .then([]));
  it('replaces the feature and price-id lists whole', () =>
    given(create(), update({ features: ['a', 'b'] }))
      .when(update({ features: ['c'], providerPriceIds: { stripe: ['price_1'], paddle: [] } }))
      .then((_events, after) =>
        expect(after).toMatchObject({ features: ['c'], providerPriceIds: { stripe: ['price_1'], paddle: [] } }),
      ));
  it('deactivating a plan with active subscribers is 422 invalid-transition; without them it deactivates', () => {
    given(create())
      .when(update({ isActive: false }, true))
      .thenFails('invalid-transition', 422);
    given(create())
      .when(update({ isActive: false }))
      .then((_events, after) => expect(after).toMatchObject({ isActive: false }));
  });
});
