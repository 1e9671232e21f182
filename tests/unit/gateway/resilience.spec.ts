import { describe, expect, it } from 'vitest';
import { CircuitBreaker, TenantBreaker } from '../../../infra/resilience/breaker';
import { Guard } from '../../../infra/resilience/guard';
import { fixedClock, systemClock } from '../../../infra/runtime/clock';
import { LocalBuckets, RateLimiter } from '../../../gateway/rate-limit';
import { createMemoryCache } from '../../../infra/cache/memory';
import { silentLogger } from '../../../infra/observability/logger';
import { pollUntil } from '../../support/poll';

describe('a closed circuit', () => {
  it('opens after 5 consecutive failures of several tenants within 30 s', () => {
    const b = new CircuitBreaker();
    for (let i = 0; i < 5; i += 1) b.failed(i * 1000, 'response', i % 2 ? 'a' : 'b', false);
    expect(b.admit(5000)).toBe('reject');
  });

  it('stays closed when a success breaks the streak', () => {
    const b = new CircuitBreaker();
    for (let i = 0; i < 4; i += 1) b.failed(i, 'transport', null, false);
    b.succeeded();
    b.failed(10, 'transport', null, false);
    expect(b.admit(11)).toBe('call');
  });

  it("leaves one tenant's 5xx streak to that tenant's soft breaker", () => {
    const b = new CircuitBreaker();
    for (let i = 0; i < 20; i += 1) b.failed(i, 'response', 'a', false);
    expect(b.admit(20)).toBe('call');
  });

  it('half-opens after 30 s with exactly one probe', () => {
    const b = new CircuitBreaker();
    for (let i = 0; i < 5; i += 1) b.failed(0, 'transport', null, false);
    expect(b.admit(29_999)).toBe('reject');
    expect(b.admit(30_000)).toBe('probe');
    expect(b.admit(30_001)).toBe('reject');
    b.succeeded();
    expect(b.admit(30_002)).toBe('call');
  });
});

describe('the per-tenant soft breaker', () => {
  it('isolates a tenant above 50 % errors over at least 10 calls in 60 s, and forgets after the window', () => {
    const t = new TenantBreaker();
    for (let i = 0; i < 5; i += 1) t.record('a', false, i);
    for (let i = 0; i < 5; i += 1) t.record('a', true, i);
    expect(t.isolated('a', 10)).toBe(false); // exactly 50 %
    t.record('a', true, 11);
    expect(t.isolated('a', 12)).toBe(true);
    expect(t.isolated('b', 12)).toBe(false);
    expect(t.isolated('a', 70_000)).toBe(false);
  });
});

describe('the local token bucket', () => {
  it('lets the limit through at once, then refills at limit per minute', () => {
    const buckets = new LocalBuckets(60_000);
    const keys = [{ key: 'u', limit: 60 }];
    for (let i = 0; i < 60; i += 1) expect(buckets.take(keys, 0).ok).toBe(true);
    const refused = buckets.take(keys, 0);
    expect(refused).toEqual({ ok: false, limit: 60, retryAfterMs: 1000 });
    expect(buckets.take(keys, 1000).ok).toBe(true);
  });
});

describe('a guarded dependency call', () => {
  it('answers 504 at the deadline, 503 while open, and retries an idempotent call once', async () => {
    const clock = fixedClock(new Date(0));
    const guard = new Guard({ name: 's3', timeoutMs: 20, clock, retryDelayMs: 1 });
    await expect(guard.run(() => new Promise(() => undefined))).rejects.toMatchObject({ status: 504 });
    let calls = 0;
    const flaky = () => {
      calls += 1;
      return calls === 1 ? Promise.reject(new Error('reset')) : Promise.resolve('ok');
    };
    await expect(guard.run(flaky, { idempotent: true })).resolves.toBe('ok');
    expect(calls).toBe(2);
    for (let i = 0; i < 5; i += 1) await guard.run(() => Promise.reject(new Error('down'))).catch(() => undefined);
    await expect(guard.run(async () => 'never')).rejects.toMatchObject({ status: 503 });
    clock.advance(30_000);
    await expect(guard.run(async () => 'probe')).resolves.toBe('probe');
  });
});

describe('the two-layer rate limiter', () => {
  const counting = () => {
    const cache = createMemoryCache();
    const calls: number[] = [];
    return {
      calls,
      cache: {
        ...cache,
        incrWindow: (key: string, windowMs: number, by = 1) => {
          calls.push(by);
          return cache.incrWindow(key, windowMs, by);
        },
      },
    };
  };

  it('admits exactly the limit, batching hits far from it into few store calls', async () => {
    const { cache, calls } = counting();
    const limiter = new RateLimiter(cache, systemClock, silentLogger(), { batchMs: 1 });
    const keys = [{ key: 'u', limit: 100 }];
    const decisions = await Promise.all(Array.from({ length: 120 }, () => limiter.check(keys)));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(100);
    // the admitted hits reach the store in batches, a moment after the answers
    await pollUntil(
      async () => calls.reduce((a, b) => a + b, 0),
      (n) => n >= 100,
      { timeoutMs: 5_000, everyMs: 5, what: 'the admitted hits counted in the store' },
    );
    expect(calls.reduce((a, b) => a + b, 0)).toBe(100); // every hit the local bucket admitted is counted in the store once
    expect(calls.length).toBeLessThan(120);
  });

  it('falls back to the local bucket while the store fails', async () => {
    const failing = { ...createMemoryCache(), incrWindow: () => Promise.reject(new Error('down')) };
    const limiter = new RateLimiter(failing, systemClock, silentLogger());
    const keys = [{ key: 'u', limit: 3 }];
    const decisions = [];
    for (let i = 0; i < 4; i += 1) decisions.push(await limiter.check(keys));
    expect(decisions.map((d) => [d.allowed, d.layer])).toEqual([
      [true, 'local'],
      [true, 'local'],
      [true, 'local'],
      [false, 'local'],
    ]);
  });
});
