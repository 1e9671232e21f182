import { describe, expect, it } from 'vitest';
import type { PlanLimits } from '../../../domain/billing/resources';
import type {
  TenantBilling,
  PlanFacts,
  SubscriptionCommand,
  SubscriptionEvent,
} from '../../../domain/billing/subscription';
import { subscriptionDecider } from '../../../domain/billing/subscription';
import { plusDays } from '../../../domain/billing/timeline';
import { commandScenario } from '../../support/decider-scenario';

/** the subscription decider: the spec's transitions table, one rule per test (given events, when command, then events or refusal) */
const T0 = '2026-01-10T12:00:00.000Z';
const limits = (users: number): PlanLimits => ({
  users,
  records: 100,
  storageBytes: 100,
  eventsPerDay: 100,
  modules: 1,
  featureFlags: 1,
  customDomains: 1,
  includedSubtenants: 0,
  requestsPerMinute: 0,
  moneyMaxTransaction: 1,
  moneyMaxBalance: 1,
});
const free: PlanFacts = { id: 'free', priceCents: 0, isActive: true, limits: limits(5) };
const paid: PlanFacts = { id: 'paid', priceCents: 4900, isActive: true, limits: limits(50) };
const small: PlanFacts = { id: 'small', priceCents: 900, isActive: true, limits: limits(2) };

const { given } = commandScenario(subscriptionDecider);
const sub = (a: TenantBilling) => {
  if (a.status !== 'exists') throw new Error('no subscription');
  return a.subscription;
};
const after = (events: SubscriptionEvent[]) => events[events.length - 1]!.data.subscription;

type Create = Extract<SubscriptionCommand, { type: 'CreateSubscription' }>;
const create = (plan = free, now = T0): Create => ({
  type: 'CreateSubscription',
  subscriptionId: 's1',
  tenantId: 't1',
  plan,
  externalId: null,
  externalIdHolder: null,
  trialEnd: plusDays(now, 14),
  automatic: false,
  now,
});
const change = (plan: PlanFacts, version: number, currentPlan = free): SubscriptionCommand => ({
  type: 'ChangePlan',
  subscriptionId: 's1',
  version,
  plan,
  currentPlan,
  now: T0,
});
const advance = (
  days: number,
  plan = paid,
  extra: Partial<Extract<SubscriptionCommand, { type: 'Advance' }>> = {},
): SubscriptionCommand => ({
  type: 'Advance',
  now: plusDays(T0, days),
  plan,
  pendingPlan: null,
  overLimit: false,
  noticesSent: 6,
  ...extra,
});

describe('no subscription yet', () => {
  it('creation starts a trial of BILLING_TRIAL_DAYS at version 1', () => {
    given()
      .when(create())
      .then((events) =>
        expect(after(events)).toMatchObject({
          status: 'trialing',
          version: 1,
          trialEnd: plusDays(T0, 14),
          currentPeriodEnd: plusDays(T0, 14),
          planId: 'free',
        }),
      );
  });
  it('an automatic creation for a tenant that has a subscription does nothing; an explicit one is 409', () => {
    const g = given(create());
    g.when({ ...create(), automatic: true }).then([]);
    g.when(create()).thenFails('conflict', 409);
  });
  it('other commands find no subscription', () =>
    given().when({ type: 'CancelSubscription', subscriptionId: 's1', now: T0 }).thenFails('not-found', 404));
});

describe('a trialing subscription', () => {
  it('an upgrade changes the plan at once, version + 1', () =>
    given(create())
      .when(change(paid, 1))
      .then((events) =>
        expect(after(events)).toMatchObject({
          planId: 'paid',
          version: 2,
          pendingPlanId: null,
        }),
      ));
  it('a stale version is 409 optimistic-lock-conflict', () =>
    given(create()).when(change(paid, 7)).thenFails('optimistic-lock-conflict', 409));
  it('the same plan is no change', () => given(create()).when(change(free, 1)).then([]));
  it('a downgrade waits for the period end; a second change is 409 plan-change-in-progress; cancel-downgrade clears it', () => {
    const g = given(create(paid), change(small, 1, paid));
    expect(sub(g.state)).toMatchObject({
      planId: 'paid',
      pendingPlanId: 'small',
      downgradeAt: plusDays(T0, 14),
      version: 2,
    });
    g.when(change(free, 2, paid)).thenFails('plan-change-in-progress', 409);
    g.when({ type: 'CancelDowngrade', subscriptionId: 's1', now: T0 }).then((events) =>
      expect(after(events)).toMatchObject({
        pendingPlanId: null,
        downgradeAt: null,
        version: 3,
      }),
    );
  });
  it('payment collected → active', () =>
    given(create(paid))
      .when({ type: 'RecordPayment', now: T0 })
      .then((events) =>
        expect(after(events)).toMatchObject({
          status: 'active',
          version: 2,
        }),
      ));
  it('a paid plan at trial end without payment → past_due from the trial end', () =>
    given(create(), change(paid, 1))
      .when(advance(14))
      .then((events) =>
        expect(after(events)).toMatchObject({
          status: 'past_due',
          pastDueSince: plusDays(T0, 14),
        }),
      ));
  it('a free plan at trial end → active (nothing to collect)', () =>
    given(create())
      .when(advance(14, free))
      .then((events) =>
        expect(after(events)).toMatchObject({
          status: 'active',
          currentPeriodStart: plusDays(T0, 14),
        }),
      ));
  it('before trial end nothing happens', () => given(create(), change(paid, 1)).when(advance(13)).then([]));
});

describe('the unpaid episode', () => {
  const pastDue = () => given(create(), change(paid, 1), advance(14));
  it('stays past_due through day 7, suspended on day 8', () => {
    pastDue()
      .when(advance(14 + 7.99))
      .then([]);
    pastDue()
      .when(advance(14 + 8))
      .then((events) => expect(after(events)).toMatchObject({ status: 'suspended' }));
  });
  it('terminated on day 38 with the deleting_records phase', () => {
    const g = given(create(), change(paid, 1), advance(14), advance(22));
    g.when(advance(14 + 38)).then((events) =>
      expect(after(events)).toMatchObject({
        status: 'terminated',
        termination: { phase: 'deleting_records' },
      }),
    );
  });
  it('never terminated before five notices were delivered', () => {
    const g = given(create(), change(paid, 1), advance(14), advance(22));
    g.when(advance(14 + 60, paid, { noticesSent: 4 })).then([]);
  });
  it('phases: nothing is asked the first 24 h; then the records erasure is requested, and the phase moves only on the confirmations', () => {
    const g = given(create(), change(paid, 1), advance(14), advance(22), advance(52));
    g.when(advance(52.99, paid, { erased: { deleting_records: true } })).then([]);
    g.when(advance(53)).then((events) => {
      expect(events.map((e) => e.data.change)).toEqual(['erasure_requested']);
      expect(after(events)).toMatchObject({ termination: { phase: 'deleting_records', erasureRequested: true } });
    });
    const asked = given(create(), change(paid, 1), advance(14), advance(22), advance(52), advance(53));
    // no confirmation, however late: the phase stays
    asked.when(advance(80)).then([]);
    asked.when(advance(53.1, paid, { erased: { deleting_records: true } })).then((events) =>
      expect(after(events)).toMatchObject({
        termination: { phase: 'deleting_files', erasureRequested: true },
      }),
    );
  });
  it('completed once the files are erased, not before 48 h after the termination', () => {
    const inFiles = given(
      create(),
      change(paid, 1),
      advance(14),
      advance(22),
      advance(52),
      advance(53),
      advance(53.1, paid, { erased: { deleting_records: true } }),
    );
    inFiles.when(advance(53.2, paid, { erased: { deleting_files: true } })).then([]);
    inFiles.when(advance(60)).then([]);
    inFiles
      .when(advance(54, paid, { erased: { deleting_files: true } }))
      .then((events) => expect(after(events).termination?.phase).toBe('completed'));
  });
  it('payment received → active, data untouched (past_due and suspended alike)', () => {
    pastDue()
      .when({ type: 'RecordPayment', now: plusDays(T0, 16) })
      .then((events) =>
        expect(after(events)).toMatchObject({
          status: 'active',
          pastDueSince: null,
        }),
      );
    const suspended = given(create(), change(paid, 1), advance(14), advance(22));
    suspended
      .when({ type: 'RecordPayment', now: plusDays(T0, 23) })
      .then((events) => expect(after(events).status).toBe('active'));
  });
  it('a terminated subscription cannot be updated (422 invalid-transition) nor paid back; the platform owner recovers it until completed', () => {
    const terminated = given(create(), change(paid, 1), advance(14), advance(22), advance(52));
    const s = sub(terminated.state);
    terminated.when(change(free, s.version, paid)).thenFails('invalid-transition', 422);
    terminated.when({ type: 'RecordPayment', now: plusDays(T0, 52) }).then([]);
    terminated.when({ type: 'Recover', now: plusDays(T0, 52) }).then((events) =>
      expect(after(events)).toMatchObject({
        status: 'active',
        termination: null,
      }),
    );
    const completed = given(
      create(),
      change(paid, 1),
      advance(14),
      advance(22),
      advance(52),
      advance(53),
      advance(53.1, paid, { erased: { deleting_records: true } }),
      advance(54, paid, { erased: { deleting_files: true } }),
    );
    completed.when({ type: 'Recover', now: plusDays(T0, 55) }).thenFails('invalid-transition', 422);
  });
  it('an active subscription whose payment fails → past_due', () =>
    given(create(paid), { type: 'RecordPayment', now: T0 })
      .when({ type: 'RecordPaymentFailure', now: plusDays(T0, 3) })
      .then((events) => expect(after(events)).toMatchObject({ status: 'past_due', pastDueSince: plusDays(T0, 3) })));
});

describe('cancellation', () => {
  it('schedules the end of the period and keeps the status; canceled (6) once the period ends; a second cancel is 422', () => {
    const g = given(
      create(paid),
      { type: 'RecordPayment', now: T0 },
      { type: 'CancelSubscription', subscriptionId: 's1', now: plusDays(T0, 2) },
    );
    expect(sub(g.state)).toMatchObject({ status: 'active', cancelAtPeriodEnd: true, canceledAt: plusDays(T0, 2) });
    g.when({ type: 'CancelSubscription', subscriptionId: 's1', now: plusDays(T0, 3) }).thenFails(
      'invalid-transition',
      422,
    );
    g.when(advance(32)).then((events) => expect(after(events)).toMatchObject({ status: 'canceled' }));
  });
  it("the provider's cancellation is the same, once", () => {
    const g = given(create(paid), { type: 'RecordProviderCancellation', now: T0 });
    g.when({ type: 'RecordProviderCancellation', now: T0 }).then([]);
  });
});

describe('an active subscription at its period boundary', () => {
  it('renews monthly; applies a pending downgrade first', () => {
    const g = given(create(paid), { type: 'RecordPayment', now: T0 }, change(small, 2, paid));
    g.when(advance(31, paid, { pendingPlan: small })).then((events) => {
      expect(events.map((e) => e.data.change)).toEqual(['downgrade_applied', 'renewed']);
      expect(after(events)).toMatchObject({
        planId: 'small',
        pendingPlanId: null,
        currentPeriodStart: '2026-02-10T12:00:00.000Z',
        currentPeriodEnd: '2026-03-10T12:00:00.000Z',
      });
    });
  });
  it('a downgraded tenant still over a limit 30 days after the downgrade → past_due; under it, the grace ends', () => {
    const g = given(
      create(paid),
      { type: 'RecordPayment', now: T0 },
      change(small, 2, paid),
      advance(31, paid, { pendingPlan: small }),
    );
    g.when(advance(62, small, { overLimit: true })).then((events) =>
      expect(after(events)).toMatchObject({ status: 'past_due' }),
    );
    g.when(advance(62, small, { overLimit: false })).then((events) =>
      expect(after(events)).toMatchObject({
        status: 'active',
        downgradedAt: null,
      }),
    );
  });
});

describe('a tenant that had its trial', () => {
  /** created (trial), canceled, and the period over: status canceled at day 15 */
  const canceledHistory = (): SubscriptionCommand[] => [
    create(),
    { type: 'CancelSubscription', subscriptionId: 's1', now: T0 },
    advance(15, free),
  ];
  const resubscribe = (plan: PlanFacts, days: number, id = 's2'): Create => ({
    ...create(plan, plusDays(T0, days)),
    subscriptionId: id,
  });

  it('a canceled tenant resubscribes to a paid plan without a trial: past_due from its creation (day 0), a monthly period', () => {
    const g = given(...canceledHistory());
    expect(sub(g.state).status).toBe('canceled');
    g.when(resubscribe(paid, 16)).then((events) =>
      expect(after(events)).toMatchObject({
        id: 's2',
        status: 'past_due',
        trialEnd: null,
        pastDueSince: plusDays(T0, 16),
        currentPeriodStart: plusDays(T0, 16),
        currentPeriodEnd: '2026-02-26T12:00:00.000Z',
        version: 1,
      }),
    );
  });
  it('on the free plan: active at once (nothing to collect), no trial', () =>
    given(...canceledHistory())
      .when(resubscribe(free, 16))
      .then((events) =>
        expect(after(events)).toMatchObject({
          status: 'active',
          trialEnd: null,
          pastDueSince: null,
        }),
      ));
  it('the paid resubscription is active once the provider reports a payment; unpaid, it escalates like any', () => {
    const g = given(...canceledHistory(), resubscribe(paid, 16));
    g.when({ type: 'RecordPayment', now: plusDays(T0, 17) }).then((events) =>
      expect(after(events)).toMatchObject({
        status: 'active',
        pastDueSince: null,
      }),
    );
    g.when(advance(16 + 8)).then((events) => expect(after(events)).toMatchObject({ status: 'suspended' }));
  });
  it('never trials twice: cancel → resubscribe → cancel → resubscribe', () => {
    const g = given(
      ...canceledHistory(),
      resubscribe(paid, 16),
      { type: 'CancelSubscription', subscriptionId: 's2', now: plusDays(T0, 17) },
      advance(16 + 32),
    );
    expect(sub(g.state)).toMatchObject({ id: 's2', status: 'canceled' });
    for (const plan of [paid, free]) {
      g.when(resubscribe(plan, 50, 's3')).then((events) => {
        expect(after(events).status).not.toBe('trialing');
        expect(after(events).trialEnd).toBeNull();
      });
    }
  });
  it('the automatic trial (a new tenant, the backfill) never comes to a tenant that had a subscription', () => {
    given(...canceledHistory())
      .when({ ...resubscribe(free, 16), automatic: true })
      .then([]);
    given(create())
      .when({ ...resubscribe(free, 1), automatic: true })
      .then([]);
  });
  it('a live subscription is still 409 conflict', () =>
    given(create()).when(resubscribe(paid, 1)).thenFails('conflict', 409));
});

describe('a terminated tenant', () => {
  const terminated = () => given(create(), change(paid, 1), advance(14), advance(22), advance(52));
  it("cannot subscribe again (422 invalid-transition): it returns only through the platform owner's recovery", () => {
    const g = terminated();
    expect(sub(g.state).status).toBe('terminated');
    g.when({ ...create(paid, plusDays(T0, 52)), subscriptionId: 's2' }).thenFails('invalid-transition', 422);
    g.when({ ...create(free, plusDays(T0, 52)), subscriptionId: 's2' }).thenFails('invalid-transition', 422);
    g.when({ ...create(free, plusDays(T0, 52)), subscriptionId: 's2', automatic: true }).then([]);
    g.when({ type: 'Recover', now: plusDays(T0, 52) }).then((events) => expect(after(events).status).toBe('active'));
  });
});

describe("a payment provider's subscription id (externalId)", () => {
  it("bound to another tenant: a subscription naming it is refused (409 conflict); the tenant's own binding, or none, is accepted", () => {
    const withId = (holder: string | null): Create => ({
      ...create(paid),
      externalId: 'sub_x',
      externalIdHolder: holder,
    });
    given().when(withId('t2')).thenFails('conflict', 409);
    given()
      .when(withId('t1'))
      .then((events) => expect(after(events).externalId).toBe('sub_x'));
    given()
      .when(withId(null))
      .then((events) => expect(after(events).externalId).toBe('sub_x'));
  });
  it('a link to an id another tenant holds is refused, never rebinding it; a free one, or its own, links', () => {
    const g = given(create(paid));
    g.when({ type: 'LinkExternal', externalId: 'sub_x', holder: 't2', now: T0 }).thenFails('conflict', 409);
    g.when({ type: 'LinkExternal', externalId: 'sub_x', holder: null, now: T0 }).then((events) =>
      expect(after(events)).toMatchObject({
        externalId: 'sub_x',
        version: 2,
      }),
    );
    g.when({ type: 'LinkExternal', externalId: 'sub_x', holder: 't1', now: T0 }).then((events) =>
      expect(after(events).externalId).toBe('sub_x'),
    );
  });
});
