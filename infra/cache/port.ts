/**
 * Short-lived shared state: caches, replay guards, locks and rate-limit counters. Redis (or Valkey)
 * in production so every process sees the same state; an in-process map for `npm start`.
 * Both adapters pass one contract suite (tests/int/cache/contract.ts).
 *
 * Values are strings: callers encode what they store, so both adapters keep the same bytes.
 * Every entry expires; nothing here is durable state.
 */
export interface WindowCount {
  /** hits in the current window, this one included */
  count: number;
  /** epoch ms at which the window ends and the count starts again from zero */
  resetAt: number;
}

export interface KeyValueCache {
  readonly kind: 'memory' | 'redis';
  /** the value, or null when absent or expired */
  get(key: string): Promise<string | null>;
  /** the values of several keys in one round trip (Redis MGET), in the order asked; null for each absent one */
  getMany(keys: readonly string[]): Promise<(string | null)[]>;
  set(key: string, value: string, ttlMs: number): Promise<void>;
  /** stores only when the key is absent, atomically: true when this call stored it (replay caches, locks) */
  setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean>;
  /**
   * Fixed-window counter, atomic: the first hit opens a window of windowMs, later hits count into it
   * until it ends. Concurrent callers never lose a hit or open two windows. `by` adds that many
   * hits at once (default 1): callers that batch hits count them in one call.
   */
  incrWindow(key: string, windowMs: number, by?: number): Promise<WindowCount>;
  del(key: string): Promise<void>;
  /** throws when the store cannot be reached, so callers can fall back */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export const assertHits = (by: number): void => {
  if (!Number.isInteger(by) || by <= 0) throw new RangeError(`hits must be a positive integer, got ${by}`);
};

export const assertTtl = (ttlMs: number): void => {
  if (!Number.isInteger(ttlMs) || ttlMs <= 0)
    throw new RangeError(`ttl must be a positive integer of ms, got ${ttlMs}`);
};
