/**
 * Delivery to a subscription's handler (spec 002: "after 3 failed processing attempts an event goes
 * to platform.<domain>.dlq"): at least once, in order per entity (domain/events/key-lanes.ts); a
 * failing event holds its entity back between attempts, then is dead-lettered and the entity moves on.
 */
export const ATTEMPTS_BEFORE_DLQ = 3;

/** the wait after the n-th failed attempt: base, 2 × base, … */
export const retryDelayMs = (failedAttempts: number, baseMs: number): number =>
  baseMs * 2 ** Math.max(0, failedAttempts - 1);

/** error: what the tenant reads (lastError); detail: what only the platform's log gets */
export type AttemptOutcome = { ok: true } | { ok: false; error: string; detail?: string };

export type FailureDecision =
  { kind: 'retry'; attempts: number; delayMs: number } | { kind: 'dead-letter'; failureCount: number };

export const afterFailure = (attemptsSoFar: number, baseMs: number): FailureDecision => {
  const attempts = attemptsSoFar + 1;
  return attempts >= ATTEMPTS_BEFORE_DLQ
    ? { kind: 'dead-letter', failureCount: attempts }
    : { kind: 'retry', attempts, delayMs: retryDelayMs(attempts, baseMs) };
};

/** an error as kept in lastError: one line, at most 1,000 characters */
// eslint-disable-next-line no-control-regex -- control characters are what is flattened
export const errorText = (error: string): string => error.replace(/[\u0000-\u001f\u007f]+/g, ' ').slice(0, 1000);
