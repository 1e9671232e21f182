import { describe, expect, it } from 'vitest';
import { Wakeup, chunk, clampOffset, validateTopicSpecs, withTimeout } from '../../../infra/log/support';

describe('a wakeup nobody signalled', () => {
  it('waits out its time', async () => {
    const started = Date.now();
    await new Wakeup().wait(60);
    expect(Date.now() - started).toBeGreaterThanOrEqual(55);
  });
});

describe('a wakeup signalled while nobody waited', () => {
  it('ends the next wait at once, and only that one', async () => {
    const wakeup = new Wakeup();
    wakeup.signal();

    const first = Date.now();
    await wakeup.wait(5_000);
    expect(Date.now() - first).toBeLessThan(50);

    const second = Date.now();
    await wakeup.wait(60);
    expect(Date.now() - second).toBeGreaterThanOrEqual(55);
  });
});

describe('a wakeup with a waiter', () => {
  it('ends the wait when signalled', async () => {
    const wakeup = new Wakeup();
    const started = Date.now();
    setTimeout(() => wakeup.signal(), 20);
    await wakeup.wait(5_000);
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});

describe('clampOffset', () => {
  it('keeps an offset inside [log start, log end]', () => {
    expect(clampOffset(-3, 2, 10)).toBe(2);
    expect(clampOffset(5, 2, 10)).toBe(5);
    expect(clampOffset(99, 2, 10)).toBe(10);
  });
});

describe('validateTopicSpecs', () => {
  it("refuses what Kafka refuses: other characters, '.' and '..', over 249 characters", () => {
    for (const name of ['a b', 'ü', '.', '..', 'x'.repeat(250), '']) {
      expect(() => validateTopicSpecs([{ name, partitions: 1, retentionMs: 1 }]), name).toThrow(/invalid topic name/);
    }
  });

  it('accepts platform topic names', () => {
    expect(() =>
      validateTopicSpecs([{ name: 'platform.money.events', partitions: 12, retentionMs: 86_400_000 }]),
    ).not.toThrow();
  });

  it('refuses partitions and retention that are not positive integers', () => {
    expect(() => validateTopicSpecs([{ name: 't', partitions: 1.5, retentionMs: 1 }])).toThrow(/partitions/);
    expect(() => validateTopicSpecs([{ name: 't', partitions: 1, retentionMs: 0 }])).toThrow(/retentionMs/);
  });
});

describe('chunk', () => {
  it('splits in order into pieces of at most the size', () => {
    expect(chunk([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(chunk([], 3)).toEqual([]);
  });
});

describe('withTimeout', () => {
  it('rejects naming the work when it takes too long', async () => {
    await expect(withTimeout(new Promise(() => undefined), 20, 'the ping')).rejects.toThrow(
      'the ping timed out after 20 ms',
    );
  });

  it('passes the result through when in time', async () => {
    await expect(withTimeout(Promise.resolve(7), 1_000, 'x')).resolves.toBe(7);
  });
});
