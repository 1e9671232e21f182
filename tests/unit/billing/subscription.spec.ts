import { describe, expect, it } from 'vitest';
import { fold } from '../../../domain/shared/decider';
import { isDomainError } from '../../../domain/shared/errors';
import type { PlanLimits } from '../../../domain/billing/resources';
import type { Account, PlanFacts, SubscriptionCommand, SubscriptionEvent } from '../../../domain/billing/subscription';
import { subscriptionDecider } from '../../../domain/billing/subscription';
import { plusDays } from '../../../domain/billing/timeline';

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

const given = (...commands: SubscriptionCommand[]) => {
  let events: SubscriptionEvent[] = [];
  for (const c of commands) events = [...events, ...subscriptionDecider.decide(c, fold(subscriptionDecider, events))];
  const state = fold(subscriptionDecider, events);
  return {
    state,
    when: (c: SubscriptionCommand) => subscriptionDecider.decide(c, state),
    refuses: (c: SubscriptionCommand): string => {
      try {
        subscriptionDecider.decide(c, state);
      } catch (error) {
        if (isDomainError(error)) return `${error.status} ${error.suffix}`;
        throw error;
      }
      throw new Error('the command was accepted');
    },
  };
};
const sub = (a: Account) => {
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
    const s = after(given().when(create()));
    expect(s).toMatchObject({
      status: 'trialing',
      version: 1,
      trialEnd: plusDays(T0, 14),
      currentPeriodEnd: plusDays(T0, 14),
      planId: 'free',
    });
  });
  it('an automatic creation for a tenant that has a subscription does nothing; an explicit one is 409', () => {
    const g = given(create());
    expect(g.when({ ...create(), automatic: true })).toEqual([]);
    expect(g.refuses(create())).toBe('409 conflict');
  });
  it('other commands find no subscription', () =>
    expect(given().refuses({ type: 'CancelSubscription', subscriptionId: 's1', now: T0 })).toBe('404 not-found'));
});

describe('a trialing subscription', () => {
  it('an upgrade changes the plan at once, version + 1', () =>
    expect(after(given(create()).when(change(paid, 1)))).toMatchObject({
      planId: 'paid',
      version: 2,
      pendingPlanId: null,
    }));
  it('a stale version is 409 optimistic-lock-conflict', () =>
    expect(given(create()).refuses(change(paid, 7))).toBe('409 optimistic-lock-conflict'));
  it('the same plan is no change', () => expect(given(create()).when(change(free, 1))).toEqual([]));
  it('a downgrade waits for the period end; a second change is 409 plan-change-in-progress; cancel-downgrade clears it', () => {
    const g = given(create(paid), change(small, 1, paid));
    expect(sub(g.state)).toMatchObject({
      planId: 'paid',
      pendingPlanId: 'small',
      downgradeAt: plusDays(T0, 14),
      version: 2,
    });
    expect(g.refuses(change(free, 2, paid))).toBe('409 plan-change-in-progress');
    expect(after(g.when({ type: 'CancelDowngrade', subscriptionId: 's1', now: T0 }))).toMatchObject({
      pendingPlanId: null,
      downgradeAt: null,
      version: 3,
    });
  });
  it('payment collected → active', () =>
    expect(after(given(create(paid)).when({ type: 'RecordPayment', now: T0 }))).toMatchObject({
      status: 'active',
      version: 2,
    }));
  it('a paid plan at trial end without payment → past_due from the trial end', () =>
    expect(after(given(create(), change(paid, 1)).when(advance(14)))).toMatchObject({
      status: 'past_due',
      pastDueSince: plusDays(T0, 14),
    }));
  it('a free plan at trial end → active (nothing to collect)', () =>
    expect(after(given(create()).when(advance(14, free)))).toMatchObject({
      status: 'active',
      currentPeriodStart: plusDays(T0, 14),
    }));
  it('before trial end nothing happens', () => expect(given(create(), change(paid, 1)).when(advance(13))).toEqual([]));
});

describe('the unpaid episode', () => {
  const pastDue = () => given(create(), change(paid, 1), advance(14));
  it('stays past_due through day 7, suspended on day 8', () => {
    expect(pastDue().when(advance(14 + 7.99))).toEqual([]);
    expect(after(pastDue().when(advance(14 + 8)))).toMatchObject({ status: 'suspended' });
  });
  it('terminated on day 38 with the deleting_records phase', () => {
    const g = given(create(), change(paid, 1), advance(14), advance(22));
    expect(after(g.when(advance(14 + 38)))).toMatchObject({
      status: 'terminated',
      termination: { phase: 'deleting_records' },
    });
  });
  it('never terminated before five notices were delivered', () => {
    const g = given(create(), change(paid, 1), advance(14), advance(22));
    expect(g.when(advance(14 + 60, paid, { noticesSent: 4 }))).toEqual([]);
  });
  it('phases: nothing is asked the first 24 h; then the records erasure is requested, and the phase moves only on the confirmations', () => {
    const g = given(create(), change(paid, 1), advance(14), advance(22), advance(52));
    expect(g.when(advance(52.99, paid, { erased: { deleting_records: true } }))).toEqual([]);
    const requested = g.when(advance(53));
    expect(requested.map((e) => e.data.change)).toEqual(['erasure_requested']);
    expect(after(requested)).toMatchObject({ termination: { phase: 'deleting_records', erasureRequested: true } });
    const asked = given(create(), change(paid, 1), advance(14), advance(22), advance(52), advance(53));
    // no confirmation, however late: the phase stays
    expect(asked.when(advance(80))).toEqual([]);
    expect(after(asked.when(advance(53.1, paid, { erased: { deleting_records: true } })))).toMatchObject({
      termination: { phase: 'deleting_files', erasureRequested: true },
    });
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
    expect(inFiles.when(advance(53.2, paid, { erased: { deleting_files: true } }))).toEqual([]);
    expect(inFiles.when(advance(60))).toEqual([]);
    expect(after(inFiles.when(advance(54, paid, { erased: { deleting_files: true } }))).termination?.phase).toBe(
      'completed',
    );
  });
  it('payment received → active, data untouched (past_due and suspended alike)', () => {
    expect(after(pastDue().when({ type: 'RecordPayment', now: plusDays(T0, 16) }))).toMatchObject({
      status: 'active',
      pastDueSince: null,
    });
    const suspended = given(create(), change(paid, 1), advance(14), advance(22));
    expect(after(suspended.when({ type: 'RecordPayment', now: plusDays(T0, 23) })).status).toBe('active');
  });
  it('a terminated subscription cannot be updated (422 invalid-transition) nor paid back; the platform owner recovers it until completed', () => {
    const terminated = given(create(), change(paid, 1), advance(14), advance(22), advance(52));
    const s = sub(terminated.state);
    expect(terminated.refuses(change(free, s.version, paid))).toBe('422 invalid-transition');
    expect(terminated.when({ type: 'RecordPayment', now: plusDays(T0, 52) })).toEqual([]);
    expect(after(terminated.when({ type: 'Recover', now: plusDays(T0, 52) }))).toMatchObject({
      status: 'active',
      termination: null,
    });
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
    expect(completed.refuses({ type: 'Recover', now: plusDays(T0, 55) })).toBe('422 invalid-transition');
  });
  it('an active subscription whose payment fails → past_due', () =>
    expect(
      after(
        given(create(paid), { type: 'RecordPayment', now: T0 }).when({
          type: 'RecordPaymentFailure',
          now: plusDays(T0, 3),
        }),
      ),
    ).toMatchObject({ status: 'past_due', pastDueSince: plusDays(T0, 3) }));
});

describe('cancellation', () => {
  it('schedules the end of the period and keeps the status; canceled (6) once the period ends; a second cancel is 422', () => {
    const g = given(
      create(paid),
      { type: 'RecordPayment', now: T0 },
      { type: 'CancelSubscription', subscriptionId: 's1', now: plusDays(T0, 2) },
    );
    expect(sub(g.state)).toMatchObject({ status: 'active', cancelAtPeriodEnd: true, canceledAt: plusDays(T0, 2) });
    expect(g.refuses({ type: 'CancelSubscription', subscriptionId: 's1', now: plusDays(T0, 3) })).toBe(
      '422 invalid-transition',
    );
    expect(after(g.when(advance(32)))).toMatchObject({ status: 'canceled' });
  });
  it("the provider's cancellation is the same, once", () => {
    const g = given(create(paid), { type: 'RecordProviderCancellation', now: T0 });
    expect(g.when({ type: 'RecordProviderCancellation', now: T0 })).toEqual([]);
  });
});

describe('an active subscription at its period boundary', () => {
  it('renews monthly; applies a pending downgrade first', () => {
    const g = given(create(paid), { type: 'RecordPayment', now: T0 }, change(small, 2, paid));
    const events = g.when(advance(31, paid, { pendingPlan: small }));
    expect(events.map((e) => e.data.change)).toEqual(['downgrade_applied', 'renewed']);
    expect(after(events)).toMatchObject({
      planId: 'small',
      pendingPlanId: null,
      currentPeriodStart: '2026-02-10T12:00:00.000Z',
      currentPeriodEnd: '2026-03-10T12:00:00.000Z',
    });
  });
  it('a downgraded tenant still over a limit 30 days after the downgrade → past_due; under it, the grace ends', () => {
    const g = given(
      create(paid),
      { type: 'RecordPayment', now: T0 },
      change(small, 2, paid),
      advance(31, paid, { pendingPlan: small }),
    );
    expect(after(g.when(advance(62, small, { overLimit: true })))).toMatchObject({ status: 'past_due' });
    expect(after(g.when(advance(62, small, { overLimit: false })))).toMatchObject({
      status: 'active',
      downgradedAt: null,
    });
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
    expect(after(g.when(resubscribe(paid, 16)))).toMatchObject({
      id: 's2',
      status: 'past_due',
      trialEnd: null,
      pastDueSince: plusDays(T0, 16),
      currentPeriodStart: plusDays(T0, 16),
      currentPeriodEnd: '2026-02-26T12:00:00.000Z',
      version: 1,
    });
  });
  it('on the free plan: active at once (nothing to collect), no trial', () =>
    expect(after(given(...canceledHistory()).when(resubscribe(free, 16)))).toMatchObject({
      status: 'active',
      trialEnd: null,
      pastDueSince: null,
    }));
  it('the paid resubscription is active once the provider reports a payment; unpaid, it escalates like any', () => {
    const g = given(...canceledHistory(), resubscribe(paid, 16));
    expect(after(g.when({ type: 'RecordPayment', now: plusDays(T0, 17) }))).toMatchObject({
      status: 'active',
      pastDueSince: null,
    });
    expect(after(g.when(advance(16 + 8)))).toMatchObject({ status: 'suspended' });
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
      const s = after(g.when(resubscribe(plan, 50, 's3')));
      expect(s.status).not.toBe('trialing');
      expect(s.trialEnd).toBeNull();
    }
  });
  it('the automatic trial (a new tenant, the backfill) never comes to a tenant that had a subscription', () => {
    expect(given(...canceledHistory()).when({ ...resubscribe(free, 16), automatic: true })).toEqual([]);
    expect(given(create()).when({ ...resubscribe(free, 1), automatic: true })).toEqual([]);
  });
  it('a live subscription is still 409 conflict', () =>
    expect(given(create()).refuses(resubscribe(paid, 1))).toBe('409 conflict'));
});

describe('a terminated tenant', () => {
  const terminated = () => given(create(), change(paid, 1), advance(14), advance(22), advance(52));
  it("cannot subscribe again (422 invalid-transition): it returns only through the platform owner's recovery", () => {
    const g = terminated();
    expect(sub(g.state).status).toBe('terminated');
    expect(g.refuses({ ...create(paid, plusDays(T0, 52)), subscriptionId: 's2' })).toBe('422 invalid-transition');
    expect(g.refuses({ ...create(free, plusDays(T0, 52)), subscriptionId: 's2' })).toBe('422 invalid-transition');
    expect(g.when({ ...create(free, plusDays(T0, 52)), subscriptionId: 's2', automatic: true })).toEqual([]);
    expect(after(g.when({ type: 'Recover', now: plusDays(T0, 52) })).status).toBe('active');
  });
});

describe("a payment provider's subscription id (externalId)", () => {
  it("bound to another tenant: a subscription naming it is refused (409 conflict); the tenant's own binding, or none, is accepted", () => {
    const withId = (holder: string | null): Create => ({
      ...create(paid),
      externalId: 'sub_x',
      externalIdHolder: holder,
    });
    expect(given().refuses(withId('t2'))).toBe('409 conflict');
    expect(after(given().when(withId('t1'))).externalId).toBe('sub_x');
    expect(after(given().when(withId(null))).externalId).toBe('sub_x');
  });
  it('a link to an id another tenant holds is refused, never rebinding it; a free one, or its own, links', () => {
    const g = given(create(paid));
    expect(g.refuses({ type: 'LinkExternal', externalId: 'sub_x', holder: 't2', now: T0 })).toBe('409 conflict');
    expect(after(g.when({ type: 'LinkExternal', externalId: 'sub_x', holder: null, now: T0 }))).toMatchObject({
      externalId: 'sub_x',
      version: 2,
    });
    expect(after(g.when({ type: 'LinkExternal', externalId: 'sub_x', holder: 't1', now: T0 })).externalId).toBe(
      'sub_x',
    );
  });
});
