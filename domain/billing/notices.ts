import type { Subscription } from './subscription';
import { dayOf, plusDays, reached, TIMELINE } from './timeline';

/**
 * The notifications of the escalation (spec 001: notice 3 days before the trial ends, past_due,
 * repeated reminders in the grace, suspension, termination — at least 5 before any soft delete).
 * Each has a key that names it once: the worker records a key once, so a notice is sent once
 * however often the worker looks. Marks reached while the worker was away are all sent, late:
 * termination waits for five recorded notices, never for a clock alone.
 */
export type NoticeKind =
  | 'trial_ending'
  | 'past_due'
  | 'payment_reminder'
  | 'suspended'
  | 'termination_warning'
  | 'terminated'
  | 'cancel_scheduled';

export interface DueNotice {
  kind: NoticeKind;
  /** unique per subscription and occasion */
  key: string;
  /** the unpaid episode it belongs to (its pastDueSince), counted before termination */
  episode: string | null;
  subject: string;
  text: string;
}

interface Mark {
  day: number;
  kind: NoticeKind;
}

const ESCALATION_MARKS: Mark[] = [
  ...TIMELINE.pastDueNoticeDays.map((day): Mark => ({ day, kind: day === 0 ? 'past_due' : 'payment_reminder' })),
  { day: TIMELINE.suspendedNoticeDay, kind: 'suspended' },
  ...TIMELINE.terminationWarningDays.map((day): Mark => ({ day, kind: 'termination_warning' })),
  { day: TIMELINE.terminateOnDay, kind: 'terminated' },
];

const STAGE: Record<Subscription['status'], number> = {
  trialing: 0,
  active: 0,
  canceled: 0,
  past_due: 1,
  suspended: 2,
  terminated: 3,
};
const stageOf = (kind: NoticeKind): number =>
  kind === 'suspended' || kind === 'termination_warning' ? 2 : kind === 'terminated' ? 3 : 1;

const wording = (kind: NoticeKind, day: number, s: Subscription): { subject: string; text: string } => {
  const terminateOn = s.pastDueSince ? plusDays(s.pastDueSince, TIMELINE.terminateOnDay).slice(0, 10) : '';
  switch (kind) {
    case 'trial_ending':
      return {
        subject: 'Your trial ends in 3 days',
        text: `The trial of your subscription ends on ${s.trialEnd?.slice(0, 10)}. Add a payment method to keep full access.`,
      };
    case 'past_due':
      return {
        subject: 'Payment failed: your subscription is past due',
        text: `We could not collect the payment for your subscription. Access stays full for 7 days; from day 8 the tenant becomes read-only.`,
      };
    case 'payment_reminder':
      return {
        subject: `Reminder: your payment is ${day} days overdue`,
        text: `Your subscription is still unpaid (day ${day}). From day 8 the tenant becomes read-only; on day 38 it is terminated and its data deleted.`,
      };
    case 'suspended':
      return {
        subject: 'Your tenant is suspended (read-only)',
        text: `Your subscription is unpaid since ${s.pastDueSince?.slice(0, 10)}: the tenant is read-only. Unless payment is received it is terminated on ${terminateOn}.`,
      };
    case 'termination_warning':
      return {
        subject: `Your tenant will be terminated on ${terminateOn}`,
        text: `Your subscription is unpaid (day ${day}). On ${terminateOn} the tenant is terminated and the deletion of its data begins.`,
      };
    case 'terminated':
      return {
        subject: 'Your tenant was terminated',
        text: "Your subscription stayed unpaid for 38 days: access is blocked and the deletion of the tenant's data has begun. Contact the platform owner within 48 hours to recover it.",
      };
    case 'cancel_scheduled':
      return {
        subject: 'Your subscription will end',
        text: `Your subscription was canceled; it ends on ${s.currentPeriodEnd.slice(0, 10)}, when access is blocked.`,
      };
    default:
      return kind satisfies never;
  }
};

export const dueNotices = (s: Subscription, plan: { priceCents: number }, now: string): DueNotice[] => {
  const due: DueNotice[] = [];
  const add = (kind: NoticeKind, key: string, episode: string | null, day = 0) =>
    due.push({ kind, key, episode, ...wording(kind, day, s) });
  if (
    s.status === 'trialing' &&
    plan.priceCents > 0 &&
    s.trialEnd &&
    reached(now, plusDays(s.trialEnd, -TIMELINE.trialNoticeDays)) &&
    !reached(now, s.trialEnd)
  ) {
    add('trial_ending', `trial_ending:${s.trialEnd}`, null);
  }
  if (s.pastDueSince !== null && STAGE[s.status] >= 1) {
    const day = dayOf(s.pastDueSince, now);
    for (const mark of ESCALATION_MARKS) {
      if (day >= mark.day && STAGE[s.status] >= stageOf(mark.kind))
        add(mark.kind, `episode:${s.pastDueSince}:day${mark.day}`, s.pastDueSince, mark.day);
    }
  }
  if (s.cancelAtPeriodEnd && s.canceledAt && s.status !== 'canceled' && s.status !== 'terminated')
    add('cancel_scheduled', `cancel:${s.canceledAt}`, null);
  return due;
};
