import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyValueCache } from '../../../infra/cache/port';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The rules every KeyValueCache adapter keeps; each adapter's spec runs this once. */
export const keyValueCacheContract = (name: string, open: () => Promise<KeyValueCache>) => {
  describe(name, () => {
    let cache: KeyValueCache;
    // Fresh keys per test run, so a shared Redis holding leftovers of an earlier run cannot interfere.
    const key = (label: string) => `contract:${randomUUID()}:${label}`;

    beforeAll(async () => {
      cache = await open();
    });
    afterAll(async () => {
      await cache?.close();
    });

    describe('an empty cache', () => {
      it('answers a ping', async () => {
        await expect(cache.ping()).resolves.toBeUndefined();
      });

      it('returns null for a key never written', async () => {
        expect(await cache.get(key('missing'))).toBeNull();
      });

      it('refuses a ttl that is not a positive integer', async () => {
        await expect(cache.set(key('bad-ttl'), 'v', 0)).rejects.toThrow(RangeError);
        await expect(cache.incrWindow(key('bad-window'), -5)).rejects.toThrow(RangeError);
      });
    });

    describe('a value set with a ttl', () => {
      it('is returned until the ttl runs out, then gone', async () => {
        const k = key('ttl');
        await cache.set(k, '{"a":1}', 400);
        expect(await cache.get(k)).toBe('{"a":1}');
        // deliberately let the 400 ms time-to-live pass: expiry is the behaviour under test
        await sleep(600);
        expect(await cache.get(k)).toBeNull();
      });

      it('is replaced by a later set', async () => {
        const k = key('replace');
        await cache.set(k, 'first', 10_000);
        await cache.set(k, 'second', 10_000);
        expect(await cache.get(k)).toBe('second');
      });

      it('is read with others in one call, in the order asked, null where absent or expired', async () => {
        const [a, b, gone, never] = [key('many-a'), key('many-b'), key('many-gone'), key('many-never')];
        await cache.set(a, 'A', 10_000);
        await cache.set(b, 'B', 10_000);
        await cache.set(gone, 'G', 300);
        // deliberately let the 300 ms time-to-live pass
        await sleep(500);
        expect(await cache.getMany([b, never, a, gone])).toEqual(['B', null, 'A', null]);
        expect(await cache.getMany([])).toEqual([]);
      });

      it('is gone after del', async () => {
        const k = key('del');
        await cache.set(k, 'v', 10_000);
        await cache.del(k);
        expect(await cache.get(k)).toBeNull();
      });
    });

    describe('setIfAbsent on one key', () => {
      it('lets exactly one of many concurrent callers store', async () => {
        const k = key('lock');
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => cache.setIfAbsent(k, `owner-${i}`, 10_000)),
        );
        expect(results.filter(Boolean)).toHaveLength(1);
        expect(await cache.get(k)).toBe(`owner-${results.indexOf(true)}`);
      });

      it('stores again once the earlier value expired', async () => {
        const k = key('replay');
        expect(await cache.setIfAbsent(k, 'a', 400)).toBe(true);
        expect(await cache.setIfAbsent(k, 'b', 400)).toBe(false);
        // deliberately let the 400 ms time-to-live pass
        await sleep(600);
        expect(await cache.setIfAbsent(k, 'c', 10_000)).toBe(true);
        expect(await cache.get(k)).toBe('c');
      });
    });

    describe('a fixed-window counter', () => {
      it('counts every concurrent hit once, in one window', async () => {
        const k = key('window');
        const before = Date.now();
        const hits = await Promise.all(Array.from({ length: 25 }, () => cache.incrWindow(k, 60_000)));
        expect(hits.map((h) => h.count).sort((a, b) => a - b)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
        const resets = hits.map((h) => h.resetAt);
        // one window: every hit reports (within clock rounding) the same end, a minute after the first
        expect(Math.max(...resets) - Math.min(...resets)).toBeLessThan(1_000);
        expect(Math.min(...resets)).toBeGreaterThanOrEqual(before + 58_000);
        expect(Math.max(...resets)).toBeLessThanOrEqual(Date.now() + 60_000 + 50);
      });

      it('keeps the end of its window while counting, and starts again from one after it', async () => {
        const k = key('reset');
        const first = await cache.incrWindow(k, 1_000);
        // deliberately let part of the window pass
        await sleep(300);
        const second = await cache.incrWindow(k, 1_000);
        expect(second.count).toBe(2);
        // a window opened anew would end 300 ms later
        expect(Math.abs(second.resetAt - first.resetAt)).toBeLessThan(150);
        // deliberately let the rest of the window pass
        await sleep(900);
        expect((await cache.incrWindow(k, 1_000)).count).toBe(1);
      });

      it('is independent of other keys', async () => {
        const [a, b] = [key('a'), key('b')];
        await cache.incrWindow(a, 60_000);
        await cache.incrWindow(a, 60_000);
        expect((await cache.incrWindow(b, 60_000)).count).toBe(1);
      });

      it('adds a batch of hits at once, opening the window with them', async () => {
        const k = key('by');
        const first = await cache.incrWindow(k, 60_000, 5);
        expect(first.count).toBe(5);
        expect(first.resetAt).toBeGreaterThan(Date.now() + 58_000);
        expect((await cache.incrWindow(k, 60_000)).count).toBe(6);
        expect((await cache.incrWindow(k, 60_000, 10)).count).toBe(16);
        await expect(cache.incrWindow(k, 60_000, 0)).rejects.toThrow(RangeError);
      });
    });
  });
};
