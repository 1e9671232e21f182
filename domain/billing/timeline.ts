/**
 * The escalation timeline of spec 001 (States and transitions, Limits), in one place. Day n of an
 * unpaid episode starts n whole days after the subscription became past_due: grace on days 0-7,
 * suspended from day 8, terminated from day 38; notices on the days below.
 */
import { civilOf, daysInMonth, fromMs, toMs } from './instant';

export const DAY_MS = 86_400_000;
export const HOUR_MS = 3_600_000;

export const TIMELINE = {
  /** the trial-ending notice, days before the trial ends */
  trialNoticeDays: 3,
  suspendOnDay: 8,
  terminateOnDay: 38,
  /** past_due reminders (day 0 is the past_due notice itself) */
  pastDueNoticeDays: [0, 3, 6],
  suspendedNoticeDay: 8,
  /** warnings before termination: a week before and the day before */
  terminationWarningDays: [31, 37],
  /**
   * termination (spec: soft delete over 24-48 hours): nothing is erased in the first 24 hours; then
   * records are erased, then files, each phase ending on the services' confirmations, and the
   * termination completes once the files are erased and not before 48 hours
   */
  eraseRecordsAfterHours: 24,
  completedAfterHours: 48,
  /** a downgraded tenant still over a limit this long after the downgrade took effect becomes past_due (rule 2) */
  downgradeGraceDays: 30,
  /** spec: at least 5 notifications before any soft delete */
  minNoticesBeforeTermination: 5,
} as const;

export const plusMs = (iso: string, ms: number): string => fromMs(toMs(iso) + ms);
export const plusDays = (iso: string, days: number): string => plusMs(iso, days * DAY_MS);

/** the same day of the next month, clamped to its last day (Jan 31 → Feb 28/29), same time of day */
export const plusMonth = (iso: string): string => {
  const [y, m, d] = civilOf(iso);
  const [ny, nm] = m === 12 ? [y + 1, 1] : [y, m + 1];
  const day = Math.min(d, daysInMonth(ny, nm));
  return fromMs(
    toMs(
      `${String(ny).padStart(4, '0')}-${String(nm).padStart(2, '0')}-${String(day).padStart(2, '0')}T00:00:00.000Z`,
    ) +
      (((toMs(iso) % DAY_MS) + DAY_MS) % DAY_MS),
  );
};

/** whole days since `since` (day 0 is the first day) */
export const dayOf = (since: string, now: string): number => Math.floor((toMs(now) - toMs(since)) / DAY_MS);

export const reached = (now: string, at: string | null): boolean => at !== null && toMs(now) >= toMs(at);

export const hoursSince = (since: string, now: string): number => (toMs(now) - toMs(since)) / HOUR_MS;
