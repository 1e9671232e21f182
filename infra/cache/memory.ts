import type { Clock } from '../runtime/clock';
import { systemClock } from '../runtime/clock';
import { assertHits, assertTtl, type KeyValueCache, type WindowCount } from './port';

export interface MemoryCacheOptions {
  /**
   * upper bound on entries; at the bound, expired entries go first, then the least recently written.
   * Dropping a live lock or replay marker weakens it, so size this well above the working set.
   */
  maxEntries?: number;
  clock?: Clock;
}

interface Entry {
  value: string;
  expiresAt: number;
}

/**
 * One process's cache: a Map whose insertion order is write order, so its first key is always the
 * least recently written. Atomicity comes free: every operation runs to completion on the event
 * loop before another starts. Not shared between processes: fine for `npm start`, not for a fleet.
 */
export const createMemoryCache = (options: MemoryCacheOptions = {}): KeyValueCache => {
  const maxEntries = options.maxEntries ?? 10_000;
  const clock = options.clock ?? systemClock;
  const entries = new Map<string, Entry>();
  const now = () => clock.now().getTime();

  const live = (key: string): Entry | undefined => {
    const entry = entries.get(key);
    if (entry && entry.expiresAt <= now()) {
      entries.delete(key);
      return undefined;
    }
    return entry;
  };

  let lastSweep = Number.NEGATIVE_INFINITY;
  const makeRoom = () => {
    if (entries.size < maxEntries) return;
    const t = now();
    // A full sweep walks every entry: at most once a second, so a cache full of live entries
    // does not pay it on every write.
    if (t - lastSweep >= 1_000) {
      lastSweep = t;
      for (const [key, entry] of entries) if (entry.expiresAt <= t) entries.delete(key);
    }
    // Still full of live entries: drop the least recently written until one slot is free.
    for (const key of entries.keys()) {
      if (entries.size < maxEntries) break;
      entries.delete(key);
    }
  };

  const write = (key: string, entry: Entry) => {
    entries.delete(key); // re-inserting moves the key to the young end
    makeRoom();
    entries.set(key, entry);
  };

  return {
    kind: 'memory',
    async get(key) {
      return live(key)?.value ?? null;
    },
    async getMany(keys) {
      return keys.map((key) => live(key)?.value ?? null);
    },
    async set(key, value, ttlMs) {
      assertTtl(ttlMs);
      write(key, { value, expiresAt: now() + ttlMs });
    },
    async setIfAbsent(key, value, ttlMs) {
      assertTtl(ttlMs);
      if (live(key)) return false;
      write(key, { value, expiresAt: now() + ttlMs });
      return true;
    },
    async incrWindow(key, windowMs, by = 1): Promise<WindowCount> {
      assertTtl(windowMs);
      assertHits(by);
      const current = live(key);
      if (!current) {
        const resetAt = now() + windowMs;
        write(key, { value: String(by), expiresAt: resetAt });
        return { count: by, resetAt };
      }
      // Counting into an open window keeps its end, and its place in the eviction order.
      current.value = String(Number(current.value) + by);
      return { count: Number(current.value), resetAt: current.expiresAt };
    },
    async del(key) {
      entries.delete(key);
    },
    async ping() {},
    async close() {
      entries.clear();
    },
  };
};
