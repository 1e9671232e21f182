import { describe, expect, it } from 'vitest';
import { createMemoryCache } from '../../../infra/cache/memory';
import { fixedClock } from '../../../infra/runtime/clock';
import { keyValueCacheContract } from './contract';

keyValueCacheContract('in-process cache', async () => createMemoryCache());

describe('an in-process cache at its size bound', () => {
  it('drops expired entries before live ones', async () => {
    const clock = fixedClock(new Date('2024-01-01T00:00:00Z'));
    const cache = createMemoryCache({ maxEntries: 3, clock });
    await cache.set('old-live', '1', 60_000);
    await cache.set('short', '2', 1_000);
    await cache.set('young', '3', 60_000);
    clock.advance(2_000);

    await cache.set('new', '4', 60_000);

    expect(await cache.get('old-live')).toBe('1');
    expect(await cache.get('young')).toBe('3');
    expect(await cache.get('new')).toBe('4');
  });

  it('drops the least recently written entry when all are live', async () => {
    const cache = createMemoryCache({ maxEntries: 3 });
    await cache.set('a', '1', 60_000);
    await cache.set('b', '2', 60_000);
    await cache.set('c', '3', 60_000);
    await cache.set('a', '1 again', 60_000); // rewriting makes 'a' the youngest

    await cache.set('d', '4', 60_000);

    expect(await cache.get('b')).toBeNull();
    expect(await cache.get('a')).toBe('1 again');
    expect(await cache.get('c')).toBe('3');
    expect(await cache.get('d')).toBe('4');
  });
});
