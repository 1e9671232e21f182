/**
 * Dead letters (spec 002, DLQ states: pending → retrying by retry or replay-all, pending → resolved
 * by DELETE). What the spec leaves open: a retrying entry redelivered successfully is resolved; one
 * that fails again is pending with one more failure (and may be retried again).
 */
export type DlqStatus = 'pending' | 'retrying' | 'resolved';

export const canRedrive = (status: DlqStatus): boolean => status === 'pending';
export const canResolve = (status: DlqStatus): boolean => status === 'pending';

/**
 * Redeliveries of one tenant are spaced at the replay rate: entry i of a redrive is due at
 * start + i / rate seconds, where start is now or the last due time already scheduled plus one
 * interval. Every worker process then keeps to the rate together, without a shared counter.
 */
export const redriveSchedule = (
  count: number,
  now: number,
  lastScheduled: number | null,
  ratePerSecond: number,
): number[] => {
  const interval = 1000 / ratePerSecond;
  const start = Math.max(now, lastScheduled === null ? now : lastScheduled + interval);
  return Array.from({ length: count }, (_, i) => Math.round(start + i * interval));
};
