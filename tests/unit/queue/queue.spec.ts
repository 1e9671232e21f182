import { describe, expect, it } from 'vitest';
import {
  afterFailure,
  backoffMs,
  claimSql,
  holderIsLive,
  leaseLapsed,
  pickSql,
  runPaced,
  wakeSql,
  withinDeadline,
} from '../../../infra/queue';

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

  it('picks inside a transaction with joins, locking only the queue table, in the order given', () => {
    expect(
      pickSql(
        { table: 'n.deliveries', key: ['id'] },
        {
          columns: 'd.id, s.version',
          from: 'n.deliveries d JOIN es.streams s ON s.id = d.id',
          due: "d.state = 'queued'",
          order: 'd.priority DESC, d.seq',
          limit: 50,
          lockOf: 'd',
        },
      ),
    ).toBe(
      "SELECT d.id, s.version FROM n.deliveries d JOIN es.streams s ON s.id = d.id WHERE d.state = 'queued' ORDER BY d.priority DESC, d.seq LIMIT 50 FOR UPDATE OF d SKIP LOCKED",
    );
    expect(pickSql({ table: 'b.events', key: ['id'] }, { columns: '1', due: 'item.id = $1', limit: 1 })).toBe(
      'SELECT 1 FROM b.events item WHERE item.id = $1 LIMIT 1 FOR UPDATE SKIP LOCKED',
    );
  });

  it('counts a claim lapsed when its lease passed, it has no holder, or its holder holds no session lock', () => {
    const sql = leaseLapsed('item.claimed_by', 'item.lease_until', '$1');
    expect(sql).toContain('item.lease_until <= $1');
    expect(sql).toContain('item.claimed_by IS NULL');
    expect(sql).toContain(`NOT ${holderIsLive('item.claimed_by')}`);
    // the 64-bit key as pg_locks shows a session advisory lock: two 32-bit halves
    expect(holderIsLive('k')).toContain('l.classid = ((k >> 32) & 4294967295)::oid');
    expect(holderIsLive('k')).toContain('l.objid = (k & 4294967295)::oid');
    expect(holderIsLive('k')).toContain("l.locktype = 'advisory' AND l.granted AND l.objsubid = 1");
  });

  it('announces new work on its channel', () => {
    expect(wakeSql('notify_queue')).toBe("SELECT pg_notify('notify_queue', '')");
  });

  it('answers a run that ends within its deadline, else aborts it and answers the timeout', async () => {
    expect(
      await withinDeadline(
        1_000,
        async () => 'done',
        () => 'late',
      ),
    ).toBe('done');
    let aborted = false;
    const late = await withinDeadline(
      20,
      (signal) =>
        new Promise<string>((resolve) => {
          signal.addEventListener('abort', () => {
            aborted = true;
            setTimeout(() => resolve('done'), 50);
          });
        }),
      () => 'late',
    );
    expect(late).toBe('late');
    expect(aborted).toBe(true);
  });
});
