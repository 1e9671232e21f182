import type { Decider } from '../shared/decider';
import { assertNever } from '../shared/decider';
import { notifyErrors } from './errors';
import type { NotificationEvent, QueuedData } from './events';
import { MAX_ATTEMPTS, retryWaitMs } from './retry';

/**
 * A notification's delivery (spec 002, Notification status):
 *
 *   (none) ──POST /notify──▶ queued ──attempt starts──▶ sending ──adapter confirms──▶ delivered
 *                              ▲                          │
 *                              └──attempt fails, retries left (after backoff)──┘
 *                                                         │ retries exhausted (or a permanent refusal)
 *   failed ◀──────────────────────────────────────────────┘
 *   failed ──POST /notify/:id/retry──▶ queued (a fresh set of retries)
 */
export type NotificationStatus = 'queued' | 'sending' | 'delivered' | 'failed';

export type Notification =
  | { status: 'none' }
  | {
      status: NotificationStatus;
      notificationId: string;
      channel: string;
      /** attempts made in this cycle (a manual retry starts a new cycle) */
      attempt: number;
      /** when the attempt in progress started */
      startedAt: string | null;
    };

export type NotificationCommand =
  | { type: 'Queue'; data: QueuedData }
  | { type: 'StartAttempt'; now: string }
  | { type: 'ConfirmDelivery'; now: string; possibleDuplicate: boolean }
  /** permanent: the channel refused for good (SMTP 5xx, push subscription gone); jitterUnit in [0, 1) */
  | { type: 'FailAttempt'; now: string; error: string; permanent: boolean; jitterUnit: number }
  /** the worker that held the attempt was lost, or the attempt timed out: outcome unknown, retried at once */
  | { type: 'AbandonAttempt'; now: string; error: string }
  | { type: 'Retry'; now: string };

const failAttempt = (
  c: Extract<NotificationCommand, { type: 'FailAttempt' }>,
  s: Extract<Notification, { status: NotificationStatus }>,
): NotificationEvent[] => {
  const wait = c.permanent ? null : retryWaitMs(s.attempt, c.jitterUnit);
  if (wait === null) {
    return [
      {
        type: 'notify.notification.failed',
        data: {
          notificationId: s.notificationId,
          attempt: s.attempt,
          error: c.error,
          failedAt: c.now,
          permanent: c.permanent,
        },
      },
    ];
  }
  return [
    {
      type: 'notify.notification.attempt_failed',
      data: {
        notificationId: s.notificationId,
        attempt: s.attempt,
        error: c.error,
        failedAt: c.now,
        retryInMs: wait,
        interrupted: false,
      },
    },
  ];
};

const abandonAttempt = (
  c: Extract<NotificationCommand, { type: 'AbandonAttempt' }>,
  s: Extract<Notification, { status: NotificationStatus }>,
): NotificationEvent[] =>
  s.attempt >= MAX_ATTEMPTS
    ? [
        {
          type: 'notify.notification.failed',
          data: {
            notificationId: s.notificationId,
            attempt: s.attempt,
            error: c.error,
            failedAt: c.now,
            permanent: false,
          },
        },
      ]
    : [
        {
          type: 'notify.notification.attempt_failed',
          data: {
            notificationId: s.notificationId,
            attempt: s.attempt,
            error: c.error,
            failedAt: c.now,
            retryInMs: 0,
            interrupted: true,
          },
        },
      ];

export const notificationDecider: Decider<Notification, NotificationCommand, NotificationEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve: (s, e) => {
    switch (e.type) {
      case 'notify.notification.queued':
        return {
          status: 'queued',
          notificationId: e.data.notificationId,
          channel: e.data.channel,
          attempt: 0,
          startedAt: null,
        };
      case 'notify.notification.sending':
        return s.status === 'none'
          ? s
          : { ...s, status: 'sending', attempt: e.data.attempt, startedAt: e.data.startedAt };
      case 'notify.notification.sent':
        return s.status === 'none' ? s : { ...s, status: 'delivered' };
      case 'notify.notification.attempt_failed':
        return s.status === 'none' ? s : { ...s, status: 'queued', startedAt: null };
      case 'notify.notification.failed':
        return s.status === 'none' ? s : { ...s, status: 'failed', startedAt: null };
      case 'notify.notification.requeued':
        return s.status === 'none' ? s : { ...s, status: 'queued', attempt: 0, startedAt: null };
      default:
        return assertNever(e);
    }
  },
  decide: (c, s) => {
    switch (c.type) {
      case 'Queue':
        return s.status === 'none' ? [{ type: 'notify.notification.queued', data: c.data }] : [];
      case 'StartAttempt':
        return s.status === 'queued'
          ? [
              {
                type: 'notify.notification.sending',
                data: { notificationId: s.notificationId, attempt: s.attempt + 1, startedAt: c.now },
              },
            ]
          : [];
      case 'ConfirmDelivery':
        return s.status === 'sending'
          ? [
              {
                type: 'notify.notification.sent',
                data: {
                  notificationId: s.notificationId,
                  channel: s.channel,
                  attempt: s.attempt,
                  sentAt: s.startedAt ?? c.now,
                  deliveredAt: c.now,
                  possibleDuplicate: c.possibleDuplicate,
                },
              },
            ]
          : [];
      case 'FailAttempt':
        return s.status === 'sending' ? failAttempt(c, s) : [];
      case 'AbandonAttempt':
        return s.status === 'sending' ? abandonAttempt(c, s) : [];
      case 'Retry':
        if (s.status === 'none') throw notifyErrors.notificationNotFound();
        if (s.status !== 'failed') throw notifyErrors.notificationNotFailed(s.status);
        return [
          { type: 'notify.notification.requeued', data: { notificationId: s.notificationId, requeuedAt: c.now } },
        ];
      default:
        return assertNever(c);
    }
  },
};
