import { describe, expect, it } from 'vitest';
import { afterFailure, backoffMs, claimSql, runPaced } from '../../../infra/queue';

describe('the kernel work queue (infra/queue.ts)', () => {
  it('given steps, waits the step of the attempt and repeats the last one', () => {
    const steps = { steps: [5_000, 30_000, 120_000] };
    expect([1, 2, 3, 4, 9].map((a) => backoffMs(steps, a))).toEqual([5_000, 30_000, 120_000, 120_000, 120_000]);
  });

  it('given doubling, waits base·2^(attempt−1) capped, spread by ±jitter', () => {
    const doubling = { baseMs: 1000, capMs: 3_600_000, jitter: 0.1 };
    expect([1, 2, 3].map((a) => backoffMs(doubling, a, 0.5))).toEqual([1000, 2000, 4000]);
    expect(backoffMs(doubling, 30, 0.5)).toBe(3_600_000);
    expect(backoffMs(doubling, 1, 0)).toBe(900);
    expect(backoffMs(doubling, 1, 0.999999)).toBe(1100);
  });

  it('gives an item up after its last attempt, else schedules it after the backoff', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    expect(afterFailure(3, 3, now, { steps: [1000] })).toEqual({ retry: false });
    expect(afterFailure(2, 3, now, { steps: [1000] })).toEqual({ retry: true, at: new Date(now.getTime() + 1000) });
    expect(afterFailure(1, 10, now, null)).toEqual({ retry: true, at: now });
  });

  it('claims in one statement that skips the items other workers hold and matches every key column', () => {
    const sql = claimSql(
      { table: 's.items', key: ['kind', 'id'] },
      {
        due: 'item.due_at <= $1',
        order: 'item.created_at',
        set: 'attempts = t.attempts + 1',
        returning: 't.id',
        carry: ['due_at'],
      },
      2,
    );
    expect(sql).toContain(
      'SELECT item.kind, item.id, item.due_at FROM s.items item WHERE item.due_at <= $1 ORDER BY item.created_at LIMIT $2 FOR UPDATE SKIP LOCKED',
    );
    expect(sql).toContain(
      'UPDATE s.items t SET attempts = t.attempts + 1 FROM due WHERE t.kind = due.kind AND t.id = due.id',
    );
  });

  it('paces the items of one key at the interval, keys side by side, continuing from the last run', async () => {
    const started: { key: string; at: number }[] = [];
    const last = new Map<string, number>([['b', Date.now()]]);
    const items = [
      { key: 'a', n: 1 },
      { key: 'b', n: 1 },
      { key: 'a', n: 2 },
      { key: 'a', n: 3 },
    ];
    const t0 = Date.now();
    await runPaced(
      items,
      (i) => i.key,
      50,
      last,
      async (i) => {
        started.push({ key: i.key, at: Date.now() - t0 });
      },
    );
    const a = started.filter((s) => s.key === 'a').map((s) => s.at);
    expect(a).toHaveLength(3);
    expect(a[1]! - a[0]!).toBeGreaterThanOrEqual(45);
    expect(a[2]! - a[1]!).toBeGreaterThanOrEqual(45);
    expect(started.find((s) => s.key === 'b')!.at).toBeGreaterThanOrEqual(45);
  });
});
