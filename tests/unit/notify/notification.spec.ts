import { describe, expect, it } from 'vitest';
import { fold } from '../../../domain/shared/decider';
import type { NotificationEvent } from '../../../domain/notify/events';
import type { NotificationCommand } from '../../../domain/notify/notification';
import { notificationDecider } from '../../../domain/notify/notification';
import { MAX_ATTEMPTS, retryWaitMs } from '../../../domain/notify/retry';
import { commandScenario } from '../../support/decider-scenario';

const T0 = '2026-01-01T00:00:00.000Z';
const at = (seconds: number) => new Date(Date.parse(T0) + seconds * 1000).toISOString();

const queue: NotificationCommand = {
  type: 'Queue',
  data: {
    notificationId: 'n-1',
    channel: 'email',
    channelType: 'email',
    channelId: null,
    recipient: { userId: 'u-1', address: 'u1@example.test' },
    subject: 'Hi',
    priority: 'normal',
    templateId: null,
    meta: {},
    module: null,
    purpose: null,
    queuedAt: T0,
  },
};
const start = (s = 0): NotificationCommand => ({ type: 'StartAttempt', now: at(s) });
/** a transient failure with the nominal wait (jitter unit 0.5) */
const fail = (s = 0, jitterUnit = 0.5): NotificationCommand => ({
  type: 'FailAttempt',
  now: at(s),
  error: '451 try later',
  permanent: false,
  jitterUnit,
});
const refuse = (s = 0): NotificationCommand => ({
  type: 'FailAttempt',
  now: at(s),
  error: '550 no such mailbox',
  permanent: true,
  jitterUnit: 0.5,
});
const confirm = (s = 0, possibleDuplicate = false): NotificationCommand => ({
  type: 'ConfirmDelivery',
  now: at(s),
  possibleDuplicate,
});
const abandon = (s = 0): NotificationCommand => ({ type: 'AbandonAttempt', now: at(s), error: 'worker lost' });
const retry = (s = 0): NotificationCommand => ({ type: 'Retry', now: at(s) });

const { history, given } = commandScenario(notificationDecider);

const types = (events: NotificationEvent[]) => events.map((e) => e.type);

describe('a new notification', () => {
  it('is queued', () =>
    given()
      .when(queue)
      .then((events, after) => {
        expect(types(events)).toEqual(['notify.notification.queued']);
        expect(after.status).toBe('queued');
      }));
  it('is queued once (a second Queue of the same id records nothing)', () =>
    given(queue)
      .when(queue)
      .then((events) => expect(events).toEqual([])));
  it('cannot be retried: 404 not-found', () => given().when(retry()).thenFails('not-found', 404));
});

describe('a queued notification', () => {
  it('starts its first attempt: sending, attempt 1', () =>
    given(queue)
      .when(start(1))
      .then((events, after) => {
        expect(events).toEqual([
          { type: 'notify.notification.sending', data: { notificationId: 'n-1', attempt: 1, startedAt: at(1) } },
        ]);
        expect(after).toMatchObject({ status: 'sending', attempt: 1 });
      }));
  it('is not confirmed without an attempt', () =>
    given(queue)
      .when(confirm())
      .then((events) => expect(events).toEqual([])));
  it('refuses a retry with 400 notification-not-failed', () =>
    given(queue).when(retry()).thenFails('notification-not-failed', 400));
});

describe('a notification being sent', () => {
  it('is delivered when the adapter confirms: notify.notification.sent with sentAt and deliveredAt', () =>
    given(queue, start(1))
      .when(confirm(2))
      .then((events, after) => {
        expect(events).toEqual([
          {
            type: 'notify.notification.sent',
            data: {
              notificationId: 'n-1',
              channel: 'email',
              attempt: 1,
              sentAt: at(1),
              deliveredAt: at(2),
              possibleDuplicate: false,
            },
          },
        ]);
        expect(after.status).toBe('delivered');
      }));
  it('goes back to the queue after a failed attempt, due 30 s later at the nominal jitter', () =>
    given(queue, start(0))
      .when(fail(0))
      .then((events, after) => {
        expect(events).toEqual([
          {
            type: 'notify.notification.attempt_failed',
            data: {
              notificationId: 'n-1',
              attempt: 1,
              error: '451 try later',
              failedAt: at(0),
              retryInMs: 30_000,
              interrupted: false,
            },
          },
        ]);
        expect(after.status).toBe('queued');
      }));
  it('fails at once when the channel refuses for good (permanent)', () =>
    given(queue, start(0))
      .when(refuse(0))
      .then((events, after) => {
        expect(types(events)).toEqual(['notify.notification.failed']);
        expect(events[0]!.data).toMatchObject({ permanent: true, attempt: 1 });
        expect(after.status).toBe('failed');
      }));
  it('whose worker was lost is queued again at once (outcome unknown)', () =>
    given(queue, start(0))
      .when(abandon(5))
      .then((events, after) => {
        expect(events).toEqual([
          {
            type: 'notify.notification.attempt_failed',
            data: {
              notificationId: 'n-1',
              attempt: 1,
              error: 'worker lost',
              failedAt: at(5),
              retryInMs: 0,
              interrupted: true,
            },
          },
        ]);
        expect(after.status).toBe('queued');
      }));
  it('refuses a retry while sending', () =>
    given(queue, start(0)).when(retry()).thenFails('notification-not-failed', 400));
});

describe('the retry schedule (spec 002: 5 retries after 30, 60, 120, 240, 480 s, 10 % jitter)', () => {
  it('waits 30, 60, 120, 240 and 480 s after attempts 1 to 5, then fails after the sixth', () => {
    const commands: NotificationCommand[] = [queue];
    let t = 0;
    const waits: number[] = [];
    for (let attempt = 1; attempt <= 5; attempt += 1) {
      commands.push(start(t));
      const [event] = notificationDecider.decide(fail(t), fold(notificationDecider, history(...commands)));
      if (event?.type !== 'notify.notification.attempt_failed') throw new Error(`attempt ${attempt}: ${event?.type}`);
      waits.push(event.data.retryInMs / 1000);
      commands.push(fail(t));
      t += event.data.retryInMs / 1000;
    }
    expect(waits).toEqual([30, 60, 120, 240, 480]);
    given(...commands, start(t))
      .when(fail(t))
      .then((events, after) => {
        expect(types(events)).toEqual(['notify.notification.failed']);
        expect(events[0]!.data).toMatchObject({ attempt: MAX_ATTEMPTS, permanent: false });
        expect(after.status).toBe('failed');
      });
  });
  it('keeps every wait within ±10 %', () => {
    for (const [attempt, base] of [
      [1, 30_000],
      [3, 120_000],
      [5, 480_000],
    ] as const) {
      expect(retryWaitMs(attempt, 0)).toBe(base * 0.9);
      expect(retryWaitMs(attempt, 0.999999)).toBeLessThanOrEqual(base * 1.1);
      expect(retryWaitMs(attempt, 0.999999)).toBeGreaterThan(base * 1.09);
    }
    expect(retryWaitMs(6, 0.5)).toBeNull();
  });
  it('fails a notification whose worker is lost on its last attempt', () => {
    const commands: NotificationCommand[] = [queue];
    for (let attempt = 1; attempt < MAX_ATTEMPTS; attempt += 1) commands.push(start(), fail());
    given(...commands, start())
      .when(abandon())
      .then((events) => expect(types(events)).toEqual(['notify.notification.failed']));
  });
});

describe('a failed notification', () => {
  const failed = [queue, start(0), refuse(0)];
  it('is queued again by a retry, with a fresh set of retries', () =>
    given(...failed)
      .when(retry(60))
      .then((events, after) => {
        expect(events).toEqual([
          { type: 'notify.notification.requeued', data: { notificationId: 'n-1', requeuedAt: at(60) } },
        ]);
        expect(after).toMatchObject({ status: 'queued', attempt: 0 });
      }));
  it('after a retry, waits 30 s again after its next failed attempt', () =>
    given(...failed, retry(60), start(60))
      .when(fail(60))
      .then((events) => {
        expect(events[0]).toMatchObject({
          type: 'notify.notification.attempt_failed',
          data: { attempt: 1, failedAt: at(60), retryInMs: 30_000 },
        });
      }));
  it('ignores a late confirmation', () =>
    given(...failed)
      .when(confirm())
      .then((events) => expect(events).toEqual([])));
});

describe('a delivered notification', () => {
  const delivered = [queue, start(0), confirm(1)];
  it('refuses a retry with 400 notification-not-failed', () =>
    given(...delivered)
      .when(retry())
      .thenFails('notification-not-failed', 400));
  it('starts no further attempt', () =>
    given(...delivered)
      .when(start(5))
      .then((events) => expect(events).toEqual([])));
});
