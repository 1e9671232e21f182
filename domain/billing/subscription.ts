import { z } from 'zod';
import type { Decider } from '../shared/decider';
import { assertNever } from '../shared/decider';
import { billingErrors } from './errors';
import type { PlanLimits } from './resources';
import { isDowngrade } from './resources';
import { dayOf, hoursSince, plusDays, plusMonth, reached, TIMELINE } from './timeline';

/** spec 001 SubscriptionStatus, with the ruled canceled = 6 */
export const STATUSES = ['trialing', 'active', 'past_due', 'suspended', 'terminated', 'canceled'] as const;
export type SubscriptionStatus = (typeof STATUSES)[number];
export const TERMINATION_PHASES = ['deleting_records', 'deleting_files', 'completed'] as const;
export type TerminationPhase = (typeof TERMINATION_PHASES)[number];

export const Termination = z.object({
  phase: z.enum(TERMINATION_PHASES),
  startedAt: z.string(),
  phaseStartedAt: z.string(),
  /**
   * billing has asked the services to erase what this phase erases (domain/shared/erasure.ts);
   * absent in terminations recorded before erasure existed
   */
  erasureRequested: z.boolean().optional(),
});

export const SubscriptionSnapshot = z.object({
  id: z.string(),
  tenantId: z.string(),
  planId: z.string(),
  status: z.enum(STATUSES),
  /** optimistic-lock version: 1 at creation, +1 on every mutation */
  version: z.number().int(),
  currentPeriodStart: z.string(),
  currentPeriodEnd: z.string(),
  trialEnd: z.string().nullable(),
  canceledAt: z.string().nullable(),
  cancelAtPeriodEnd: z.boolean(),
  externalId: z.string().nullable(),
  pendingPlanId: z.string().nullable(),
  downgradeAt: z.string().nullable(),
  /** when the unpaid episode began: day 0 of the escalation timeline */
  pastDueSince: z.string().nullable(),
  /** when a downgrade took effect (its 30-day over-limit grace runs from here) */
  downgradedAt: z.string().nullable(),
  termination: Termination.nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Subscription = z.infer<typeof SubscriptionSnapshot>;

export const CHANGES = [
  'created',
  'plan_changed',
  'downgrade_scheduled',
  'downgrade_canceled',
  'downgrade_applied',
  'cancel_scheduled',
  'canceled',
  'activated',
  'renewed',
  'past_due',
  'suspended',
  'terminated',
  'termination_phase',
  'erasure_requested',
  'recovered',
  'linked',
  'downgrade_settled',
] as const;
export type Change = (typeof CHANGES)[number];

/**
 * Every change of a tenant's subscription is one event type, as spec 001 names it:
 * billing.subscription.changed carries what changed and the whole subscription after it, so its
 * consumers (gateway caches, money's plan limits, read models) need nothing else.
 */
export const SubscriptionChanged = z.object({
  type: z.literal('billing.subscription.changed'),
  data: z.object({
    change: z.enum(CHANGES),
    subscriptionId: z.string(),
    tenantId: z.string(),
    previousStatus: z.enum(STATUSES).nullable(),
    previousPlanId: z.string().nullable(),
    subscription: SubscriptionSnapshot,
  }),
});
export const SubscriptionEvent = z.discriminatedUnion('type', [SubscriptionChanged]);
export type SubscriptionEvent = z.infer<typeof SubscriptionEvent>;

/** a tenant's billing (one stream per tenant; "account" is identity's word for a user): its current subscription (a new one replaces a canceled or terminated one) */
export type TenantBilling = { status: 'none' } | { status: 'exists'; subscription: Subscription };

/** what a decision needs to know about a plan */
export interface PlanFacts {
  id: string;
  priceCents: number;
  isActive: boolean;
  limits: PlanLimits;
}

export type SubscriptionCommand =
  /** CreateSubscription, POST /billing/subscriptions, or a new tenant (automatic: [] when it has one) */
  | {
      type: 'CreateSubscription';
      subscriptionId: string;
      tenantId: string;
      plan: PlanFacts;
      externalId: string | null;
      /** the tenant externalId is bound to already (unique across tenants), null when free */
      externalIdHolder: string | null;
      /** the end of the trial, should this be the tenant's first subscription */
      trialEnd: string;
      automatic: boolean;
      now: string;
    }
  | {
      type: 'ChangePlan';
      subscriptionId: string;
      version: number;
      plan: PlanFacts;
      currentPlan: PlanFacts;
      now: string;
    }
  | { type: 'CancelDowngrade'; subscriptionId: string; now: string }
  | { type: 'CancelSubscription'; subscriptionId: string; now: string }
  /** webhook: invoice.payment_succeeded / invoice.paid */
  | { type: 'RecordPayment'; now: string }
  /** webhook: invoice.payment_failed */
  | { type: 'RecordPaymentFailure'; now: string }
  /** webhook: customer.subscription.deleted / subscription.canceled — same as a cancellation, once */
  | { type: 'RecordProviderCancellation'; now: string }
  /** the provider's subscription id (a verified webhook, or the platform owner); holder: the tenant it is bound to, if any */
  | { type: 'LinkExternal'; externalId: string; holder: string | null; now: string }
  /** the escalation worker: whatever the clock makes due; plan facts for trial end and downgrades */
  | {
      type: 'Advance';
      now: string;
      plan: PlanFacts;
      pendingPlan: PlanFacts | null;
      overLimit: boolean;
      noticesSent: number;
      /** every service of the phase has confirmed its erasure of the current termination (read from the log) */
      erased?: Partial<Record<'deleting_records' | 'deleting_files', boolean>>;
    }
  /** the platform owner: back to active before the termination completes */
  | { type: 'Recover'; now: string };

const LIVE: ReadonlySet<SubscriptionStatus> = new Set(['trialing', 'active', 'past_due', 'suspended']);
export const isLive = (s: Subscription): boolean => LIVE.has(s.status);

const changed = (change: Change, before: Subscription | null, after: Subscription): SubscriptionEvent => ({
  type: 'billing.subscription.changed',
  data: {
    change,
    subscriptionId: after.id,
    tenantId: after.tenantId,
    previousStatus: before?.status ?? null,
    previousPlanId: before?.planId ?? null,
    subscription: after,
  },
});

/** a mutation: version + 1, updatedAt = now */
const mutate = (s: Subscription, now: string, patch: Partial<Subscription>): Subscription => ({
  ...s,
  ...patch,
  version: s.version + 1,
  updatedAt: now,
});

const current = (state: TenantBilling, subscriptionId?: string): Subscription => {
  if (state.status !== 'exists' || (subscriptionId !== undefined && state.subscription.id !== subscriptionId))
    throw billingErrors.subscriptionNotFound();
  return state.subscription;
};

/** an externalId names one provider subscription: it belongs to one tenant, whoever asks */
const requireExternalIdFree = (tenantId: string, holder: string | null): void => {
  if (holder !== null && holder !== tenantId) throw billingErrors.externalIdTaken();
};

/**
 * A tenant's first subscription is its trial; any later one (after a cancellation, or a
 * termination the platform owner recovered) has none. Every first subscription is a trial, so a
 * tenant whose stream holds any subscription has had its trial.
 */
const hadTrial = (state: TenantBilling): boolean => state.status === 'exists';

/**
 * A subscription without a trial is where a trial without payment ends (spec: trial end, no
 * payment → past_due): a free plan has nothing to collect and is active; a paid one is past_due
 * from its creation — day 0 of the escalation, active once the provider reports a payment.
 */
const withoutTrial = (plan: PlanFacts, now: string): Pick<Subscription, 'status' | 'pastDueSince'> =>
  plan.priceCents === 0 ? { status: 'active', pastDueSince: null } : { status: 'past_due', pastDueSince: now };

const create = (
  c: Extract<SubscriptionCommand, { type: 'CreateSubscription' }>,
  state: TenantBilling,
): SubscriptionEvent[] => {
  // the automatic trial is a new tenant's only: a tenant that ever had a subscription gets none
  if (c.automatic && state.status === 'exists') return [];
  if (state.status === 'exists' && isLive(state.subscription)) throw billingErrors.subscriptionExists();
  if (state.status === 'exists' && state.subscription.status === 'terminated')
    throw billingErrors.invalidTransition(
      "A terminated tenant cannot subscribe again; it returns only through the platform owner's recovery.",
    );
  if (!c.plan.isActive) throw billingErrors.planInactive();
  if (c.externalId !== null) requireExternalIdFree(c.tenantId, c.externalIdHolder);
  const trial = !hadTrial(state);
  const s: Subscription = {
    id: c.subscriptionId,
    tenantId: c.tenantId,
    planId: c.plan.id,
    ...(trial ? { status: 'trialing', pastDueSince: null } : withoutTrial(c.plan, c.now)),
    version: 1,
    currentPeriodStart: c.now,
    currentPeriodEnd: trial ? c.trialEnd : plusMonth(c.now),
    trialEnd: trial ? c.trialEnd : null,
    canceledAt: null,
    cancelAtPeriodEnd: false,
    externalId: c.externalId,
    pendingPlanId: null,
    downgradeAt: null,
    downgradedAt: null,
    termination: null,
    createdAt: c.now,
    updatedAt: c.now,
  };
  return [changed('created', null, s)];
};

const requireMutable = (s: Subscription): void => {
  if (s.status === 'terminated') throw billingErrors.invalidTransition('A terminated subscription cannot be changed.');
  if (s.status === 'canceled')
    throw billingErrors.invalidTransition('A canceled subscription cannot be changed; create a new one.');
};

const changePlan = (
  c: Extract<SubscriptionCommand, { type: 'ChangePlan' }>,
  state: TenantBilling,
): SubscriptionEvent[] => {
  const s = current(state, c.subscriptionId);
  requireMutable(s);
  if (c.version !== s.version) throw billingErrors.versionMismatch(c.version, s.version);
  if (s.pendingPlanId !== null) throw billingErrors.planChangeInProgress();
  if (c.plan.id === s.planId) return [];
  if (!c.plan.isActive) throw billingErrors.planInactive();
  if (isDowngrade(c.currentPlan.limits, c.plan.limits)) {
    return [
      changed(
        'downgrade_scheduled',
        s,
        mutate(s, c.now, { pendingPlanId: c.plan.id, downgradeAt: s.currentPeriodEnd }),
      ),
    ];
  }
  return [changed('plan_changed', s, mutate(s, c.now, { planId: c.plan.id }))];
};

const cancelDowngrade = (
  c: Extract<SubscriptionCommand, { type: 'CancelDowngrade' }>,
  state: TenantBilling,
): SubscriptionEvent[] => {
  const s = current(state, c.subscriptionId);
  if (s.pendingPlanId === null) throw billingErrors.invalidTransition('No downgrade is pending.');
  return [changed('downgrade_canceled', s, mutate(s, c.now, { pendingPlanId: null, downgradeAt: null }))];
};

const cancel = (s: Subscription, now: string, alreadyIsError: boolean): SubscriptionEvent[] => {
  if (s.status === 'terminated' || s.status === 'canceled' || s.cancelAtPeriodEnd) {
    if (!alreadyIsError) return [];
    throw billingErrors.invalidTransition(
      s.status === 'terminated' ? 'The subscription is terminated.' : 'The subscription is canceled already.',
    );
  }
  return [changed('cancel_scheduled', s, mutate(s, now, { cancelAtPeriodEnd: true, canceledAt: now }))];
};

/** a fresh monthly period from now, the unpaid episode closed */
const activate = (s: Subscription, now: string): Subscription =>
  mutate(s, now, {
    status: 'active',
    pastDueSince: null,
    termination: null,
    currentPeriodStart: now,
    currentPeriodEnd: plusMonth(now),
  });

const recordPayment = (s: Subscription, now: string): SubscriptionEvent[] => {
  switch (s.status) {
    case 'trialing':
    case 'past_due':
    case 'suspended':
      return [changed('activated', s, activate(s, now))];
    // an active subscription's renewal is the period roll; a paid invoice changes nothing more.
    // Terminated and canceled ones come back only through the platform owner or a new subscription.
    case 'active':
    case 'terminated':
    case 'canceled':
      return [];
    default:
      return assertNever(s.status);
  }
};

const recordFailure = (s: Subscription, now: string): SubscriptionEvent[] =>
  s.status === 'active' || s.status === 'trialing'
    ? [changed('past_due', s, mutate(s, now, { status: 'past_due', pastDueSince: now }))]
    : [];

/**
 * What the clock makes due, in order: trial end, the period boundary (cancellation, downgrade,
 * renewal), the downgrade grace, the escalation steps and the termination phases. One command
 * may apply several (a worker that was down catches up); each step is one event.
 */
const advance = (c: Extract<SubscriptionCommand, { type: 'Advance' }>, state: TenantBilling): SubscriptionEvent[] => {
  if (state.status !== 'exists') return [];
  const events: SubscriptionEvent[] = [];
  let s = state.subscription;
  const step = (change: Change, next: Subscription) => {
    events.push(changed(change, s, next));
    s = next;
  };
  const now = c.now;
  // a trial ending with a cancellation or a downgrade pending: those first
  if (s.status === 'trialing' && reached(now, s.trialEnd)) {
    const end = s.trialEnd!;
    if (s.cancelAtPeriodEnd)
      step('canceled', mutate(s, now, { status: 'canceled', pendingPlanId: null, downgradeAt: null }));
    else {
      let plan = c.plan;
      if (s.pendingPlanId !== null && c.pendingPlan) {
        plan = c.pendingPlan;
        step(
          'downgrade_applied',
          mutate(s, now, { planId: s.pendingPlanId, pendingPlanId: null, downgradeAt: null, downgradedAt: end }),
        );
      }
      // trial end: a free plan has nothing to collect (active); a paid one without a payment is past_due
      if (plan.priceCents === 0)
        step(
          'activated',
          mutate(s, now, { status: 'active', currentPeriodStart: end, currentPeriodEnd: plusMonth(end) }),
        );
      else step('past_due', mutate(s, now, { status: 'past_due', pastDueSince: end }));
    }
  }
  // the period boundary
  while (LIVE.has(s.status) && s.status !== 'trialing' && reached(now, s.currentPeriodEnd)) {
    const boundary = s.currentPeriodEnd;
    if (s.cancelAtPeriodEnd) {
      step('canceled', mutate(s, now, { status: 'canceled', pendingPlanId: null, downgradeAt: null }));
      break;
    }
    if (s.pendingPlanId !== null && reached(boundary, s.downgradeAt)) {
      step(
        'downgrade_applied',
        mutate(s, now, { planId: s.pendingPlanId, pendingPlanId: null, downgradeAt: null, downgradedAt: boundary }),
      );
    }
    // only a paid-up subscription renews; an unpaid one keeps its period while escalation runs
    if (s.status !== 'active') break;
    step('renewed', mutate(s, now, { currentPeriodStart: boundary, currentPeriodEnd: plusMonth(boundary) }));
  }
  // the downgrade grace: still over a limit 30 days after the downgrade → the unpaid path
  if (s.downgradedAt !== null && reached(now, plusDays(s.downgradedAt, TIMELINE.downgradeGraceDays))) {
    if (c.overLimit && s.status === 'active')
      step('past_due', mutate(s, now, { status: 'past_due', pastDueSince: now, downgradedAt: null }));
    else if (!c.overLimit) step('downgrade_settled', mutate(s, now, { downgradedAt: null }));
  }
  // escalation
  if (s.status === 'past_due' && reached(now, plusDays(s.pastDueSince!, TIMELINE.suspendOnDay))) {
    step('suspended', mutate(s, now, { status: 'suspended' }));
  }
  if (
    s.status === 'suspended' &&
    reached(now, plusDays(s.pastDueSince!, TIMELINE.terminateOnDay)) &&
    c.noticesSent >= TIMELINE.minNoticesBeforeTermination
  ) {
    step(
      'terminated',
      mutate(s, now, {
        status: 'terminated',
        termination: { phase: 'deleting_records', startedAt: now, phaseStartedAt: now },
      }),
    );
  }
  // termination: the first day nothing is erased (a recovery then restores everything); then each
  // phase asks the services to erase, and moves on only when all of them confirmed (decisions.md)
  if (s.status === 'terminated' && s.termination) {
    const t = s.termination;
    if (
      t.phase === 'deleting_records' &&
      !t.erasureRequested &&
      hoursSince(t.startedAt, now) >= TIMELINE.eraseRecordsAfterHours
    ) {
      step('erasure_requested', mutate(s, now, { termination: { ...t, erasureRequested: true, phaseStartedAt: now } }));
    }
    const t1 = s.termination;
    if (t1.phase === 'deleting_records' && t1.erasureRequested && c.erased?.deleting_records) {
      step(
        'termination_phase',
        mutate(s, now, {
          termination: { ...t1, phase: 'deleting_files', erasureRequested: true, phaseStartedAt: now },
        }),
      );
    }
    const t2 = s.termination;
    if (
      t2.phase === 'deleting_files' &&
      t2.erasureRequested &&
      c.erased?.deleting_files &&
      hoursSince(t2.startedAt, now) >= TIMELINE.completedAfterHours
    ) {
      step('termination_phase', mutate(s, now, { termination: { ...t2, phase: 'completed', phaseStartedAt: now } }));
    }
  }
  return events;
};

const recover = (s: Subscription, now: string): SubscriptionEvent[] => {
  if (s.status === 'terminated' && s.termination?.phase === 'completed') {
    throw billingErrors.invalidTransition('The termination has completed; the tenant can no longer be recovered.');
  }
  if (s.status === 'active' || s.status === 'trialing') return [];
  if (s.status === 'canceled')
    throw billingErrors.invalidTransition('A canceled subscription is not recovered; the tenant creates a new one.');
  return [changed('recovered', s, activate(s, now))];
};

export const subscriptionDecider: Decider<TenantBilling, SubscriptionCommand, SubscriptionEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve: (_s, e) => {
    switch (e.type) {
      case 'billing.subscription.changed':
        return { status: 'exists', subscription: e.data.subscription };
      default:
        return assertNever(e.type);
    }
  },
  decide: (c, state) => {
    switch (c.type) {
      case 'CreateSubscription':
        return create(c, state);
      case 'ChangePlan':
        return changePlan(c, state);
      case 'CancelDowngrade':
        return cancelDowngrade(c, state);
      case 'CancelSubscription':
        return cancel(current(state, c.subscriptionId), c.now, true);
      case 'RecordPayment':
        return recordPayment(current(state), c.now);
      case 'RecordPaymentFailure':
        return recordFailure(current(state), c.now);
      case 'RecordProviderCancellation':
        return cancel(current(state), c.now, false);
      case 'LinkExternal': {
        const s = current(state);
        requireExternalIdFree(s.tenantId, c.holder);
        return s.externalId === c.externalId
          ? []
          : [changed('linked', s, mutate(s, c.now, { externalId: c.externalId }))];
      }
      case 'Advance':
        return advance(c, state);
      case 'Recover':
        return recover(current(state), c.now);
      default:
        return assertNever(c);
    }
  },
};

/** the day n of the current unpaid episode, or null outside one */
export const episodeDay = (s: Subscription, now: string): number | null =>
  s.pastDueSince === null ? null : dayOf(s.pastDueSince, now);
