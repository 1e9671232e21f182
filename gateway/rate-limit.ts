import type { KeyValueCache } from '../infra/cache';
import type { Logger } from '../infra/observability/logger';
import type { Clock } from '../infra/runtime/clock';

/** One counted key of a request (the user or client address, the tenant) and its limit per window. */
export interface RateKey {
  key: string;
  limit: number;
}

export interface RateDecision {
  allowed: boolean;
  /** the limit of the key closest to its end (reported as X-RateLimit-Limit) */
  limit: number;
  remaining: number;
  /** epoch ms at which that key's window (or bucket) is full again */
  resetAt: number;
  /** whole seconds to wait when refused, at least 1 */
  retryAfterSeconds: number;
  /** which layer decided: global (shared counter) or local (this instance's bucket only) */
  layer: 'global' | 'local';
}

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/**
 * The first layer: a token bucket per key in this process (capacity = the limit, refilled
 * continuously at limit per window). It refuses floods without a network round trip and keeps
 * limiting when the shared store is down.
 */
export class LocalBuckets {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly windowMs: number,
    private readonly maxKeys = 100_000,
  ) {}

  /** takes one token from every key, or none when one of them is empty */
  take(
    keys: readonly RateKey[],
    now: number,
  ):
    | { ok: true; tightest: { limit: number; remaining: number; fullAt: number } }
    | { ok: false; limit: number; retryAfterMs: number } {
    const states = keys.map((k) => ({ k, b: this.refill(k, now) }));
    for (const { k, b } of states) {
      if (b.tokens < 1) return { ok: false, limit: k.limit, retryAfterMs: ((1 - b.tokens) * this.windowMs) / k.limit };
    }
    let tightest = { limit: Number.POSITIVE_INFINITY, remaining: Number.POSITIVE_INFINITY, fullAt: now };
    for (const { k, b } of states) {
      b.tokens -= 1;
      const remaining = Math.floor(b.tokens);
      if (remaining < tightest.remaining)
        tightest = { limit: k.limit, remaining, fullAt: now + ((k.limit - b.tokens) * this.windowMs) / k.limit };
    }
    return { ok: true, tightest };
  }

  private refill(k: RateKey, now: number): Bucket {
    let bucket = this.buckets.get(k.key);
    if (!bucket) {
      if (this.buckets.size >= this.maxKeys) this.evict();
      bucket = { tokens: k.limit, updatedAt: now };
      this.buckets.set(k.key, bucket);
      return bucket;
    }
    const elapsed = Math.max(0, now - bucket.updatedAt);
    bucket.tokens = Math.min(k.limit, bucket.tokens + (elapsed * k.limit) / this.windowMs);
    bucket.updatedAt = now;
    return bucket;
  }

  /** drops the oldest tenth of the keys (insertion order): a dropped bucket restarts full */
  private evict(): void {
    let n = Math.ceil(this.maxKeys / 10);
    for (const key of this.buckets.keys()) {
      if (n-- <= 0) break;
      this.buckets.delete(key);
    }
  }
}

/** what this instance last learnt of a key's shared window */
interface Known {
  key: string;
  count: number;
  resetAt: number;
  /** hits sent to the store and not yet answered */
  pending: number;
  /** admitted hits not sent yet (batched) */
  unsent: number;
}

/**
 * Two layers (spec 000, Limits): the local bucket of this instance, then a fixed-window counter
 * per key in the shared cache (Redis), so a fleet of gateways enforces one limit together.
 *
 * Every admitted request is counted in the shared store, but a request need not wait for it:
 * while the instance knows a key to be below half its limit (from the store's last answer plus
 * the hits it has admitted since), it admits at once and batches the hit, sending a key's
 * batch as one increment every few milliseconds. In the upper half of the limit, and for a key or
 * window it knows nothing of, the request waits for the store's count (its batch rides along).
 * The limit therefore stays exact unless the whole fleet adds half a limit's worth of hits to
 * one key within one batch interval and round trip, and most requests pay neither a round trip
 * nor a command of their own.
 *
 * While the store fails the gateway keeps serving on the local layer alone, logs that once a
 * minute, and skips the store for a second between attempts so an outage adds no latency.
 */
export class RateLimiter {
  private readonly local: LocalBuckets;
  private readonly known = new Map<string, Known>();
  private readonly unsent = new Set<Known>();
  private flushTimer: NodeJS.Timeout | null = null;
  private storeDownUntil = 0;
  private lastOutageLog = Number.NEGATIVE_INFINITY;
  private degraded = false;

  constructor(
    private readonly cache: KeyValueCache,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly options: {
      windowMs?: number;
      backgroundBelow?: number;
      batchMs?: number;
      maxKnownKeys?: number;
    } = {},
  ) {
    this.local = new LocalBuckets(this.windowMs);
  }

  private get windowMs(): number {
    return this.options.windowMs ?? 60_000;
  }

  async check(keys: readonly RateKey[]): Promise<RateDecision> {
    const now = this.clock.now().getTime();
    const local = this.local.take(keys, now);
    if (!local.ok) {
      const retryAfterSeconds = Math.max(1, Math.ceil(local.retryAfterMs / 1000));
      return {
        allowed: false,
        limit: local.limit,
        remaining: 0,
        resetAt: now + retryAfterSeconds * 1000,
        retryAfterSeconds,
        layer: 'local',
      };
    }
    const fromLocal = (): RateDecision => ({
      allowed: true,
      limit: local.tightest.limit,
      remaining: local.tightest.remaining,
      resetAt: local.tightest.fullAt,
      retryAfterSeconds: 0,
      layer: 'local',
    });
    if (now < this.storeDownUntil) return fromLocal();
    let counts: { count: number; resetAt: number }[];
    try {
      // count answers at once on the fast path (no promise per hit); Promise.all takes plain values as well
      // eslint-disable-next-line @typescript-eslint/await-thenable
      counts = await Promise.all(keys.map((k) => this.count(k, now)));
    } catch (error) {
      this.storeFailed(error, now);
      return fromLocal();
    }
    if (this.degraded) {
      this.degraded = false;
      this.logger.info('rate-limit store reachable again; global limits restored');
    }
    let decision: RateDecision | null = null;
    keys.forEach((k, i) => {
      const { count, resetAt } = counts[i]!;
      const remaining = Math.max(0, k.limit - count);
      const allowed = count <= k.limit;
      const candidate: RateDecision = {
        allowed,
        limit: k.limit,
        remaining,
        resetAt,
        retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((resetAt - now) / 1000)),
        layer: 'global',
      };
      // A refusal wins; among answers of the same kind the key closest to its limit is reported.
      if (
        !decision ||
        (decision.allowed && !allowed) ||
        (decision.allowed === allowed && remaining < decision.remaining)
      )
        decision = candidate;
    });
    return decision ?? fromLocal();
  }

  /** this hit's count in the key's shared window: estimated and batched when far from the limit, awaited otherwise */
  private count(
    k: RateKey,
    now: number,
  ): Promise<{ count: number; resetAt: number }> | { count: number; resetAt: number } {
    let state = this.known.get(k.key);
    if (!state) {
      if (this.known.size >= (this.options.maxKnownKeys ?? 100_000)) this.forgetOldest();
      state = { key: k.key, count: 0, resetAt: 0, pending: 0, unsent: 0 };
      this.known.set(k.key, state);
    }
    const estimate = state.count + state.pending + state.unsent + 1;
    if (now < state.resetAt && estimate <= k.limit * (this.options.backgroundBelow ?? 0.5)) {
      state.unsent += 1;
      this.unsent.add(state);
      this.flushTimer ??= setTimeout(() => this.flush(), this.options.batchMs ?? 5).unref();
      return { count: estimate, resetAt: state.resetAt };
    }
    const hits = state.unsent + 1;
    state.unsent = 0;
    this.unsent.delete(state);
    return this.send(state, hits);
  }

  /** sends every batched hit, one increment per key */
  private flush(): void {
    this.flushTimer = null;
    for (const state of this.unsent) {
      const hits = state.unsent;
      state.unsent = 0;
      this.send(state, hits).catch((error: unknown) => this.storeFailed(error, this.clock.now().getTime()));
    }
    this.unsent.clear();
  }

  private send(state: Known, hits: number): Promise<{ count: number; resetAt: number }> {
    state.pending += hits;
    return this.cache.incrWindow(state.key, this.windowMs, hits).then(
      (answer) => {
        state.pending -= hits;
        // answers of concurrent increments arrive in any order; a new window restarts the count
        if (answer.resetAt > state.resetAt + 1000) state.count = answer.count;
        else state.count = Math.max(state.count, answer.count);
        state.resetAt = Math.max(state.resetAt, answer.resetAt);
        return answer;
      },
      (error: unknown) => {
        state.pending -= hits;
        throw error;
      },
    );
  }

  private forgetOldest(): void {
    let n = Math.ceil((this.options.maxKnownKeys ?? 100_000) / 10);
    for (const key of this.known.keys()) {
      if (n-- <= 0) break;
      this.known.delete(key);
    }
  }

  private storeFailed(error: unknown, now: number): void {
    this.storeDownUntil = now + 1000;
    this.degraded = true;
    if (now - this.lastOutageLog >= 60_000) {
      this.lastOutageLog = now;
      this.logger.warn({ err: error }, 'rate-limit store unreachable; limiting with the local layer only');
    }
  }
}

/** the X-RateLimit-* headers of spec 000 (Reset is Unix time in seconds) */
export const rateLimitHeaders = (d: RateDecision): Record<string, string> => ({
  'X-RateLimit-Limit': String(d.limit),
  'X-RateLimit-Remaining': String(d.remaining),
  'X-RateLimit-Reset': String(Math.ceil(d.resetAt / 1000)),
});
