import { describe, expect, it } from 'vitest';
import { lazyImport } from '../../../infra/runtime/lazy';

describe('lazyImport', () => {
  it('loads once on first use, and says whether a load was asked for', async () => {
    let loads = 0;
    const lib = lazyImport(async () => ({ n: (loads += 1) }));
    expect(lib.started).toBe(false);
    expect(loads).toBe(0);
    const [a, b] = await Promise.all([lib(), lib()]);
    expect(a).toBe(b);
    expect(loads).toBe(1);
    expect(lib.started).toBe(true);
  });

  it('keeps no failed load: the next call tries again', async () => {
    let fail = true;
    const lib = lazyImport(async () => {
      if (fail) throw new Error('not installed');
      return 'loaded';
    });
    await expect(lib()).rejects.toThrow('not installed');
    expect(lib.started).toBe(false);
    fail = false;
    expect(await lib()).toBe('loaded');
  });
});
