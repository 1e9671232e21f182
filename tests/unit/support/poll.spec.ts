import { describe, expect, it } from 'vitest';
import { pollUntil } from '../../support/poll';

describe('pollUntil, the loop behind the suites’ eventually helpers', () => {
  it('answers the first value accepted, after as many checks as it takes', async () => {
    let calls = 0;
    const value = await pollUntil(
      async () => (calls += 1),
      (n) => n >= 3,
      { timeoutMs: 1_000, everyMs: 1 },
    );
    expect(value).toBe(3);
    expect(calls).toBe(3);
  });

  it('fails after the deadline, naming what it waited for and the last value seen', async () => {
    await expect(
      pollUntil(
        async () => ({ status: 'pending' }),
        () => false,
        { timeoutMs: 30, everyMs: 5, what: 'the file' },
      ),
    ).rejects.toThrow(/^the file did not hold within 30 ms; last: \{"status":"pending"\}$/);
  });
});
