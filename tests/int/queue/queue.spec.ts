import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../infra/postgres/db';
import { inTransaction } from '../../../infra/postgres/db';
import type { RateCandidate } from '../../../infra/queue';
import {
  admitInWindows,
  claimItems,
  leaseLapsed,
  pickSql,
  QueueSession,
  wakeSql,
  windowFull,
} from '../../../infra/queue';
import { startLoop } from '../../../workers/loop';
import { createTestDatabase, type TestDatabase } from '../../support/db';
import { pollUntil } from '../../support/poll';

/**
 * The kernel queue's options on a real PostgreSQL: leases tied to the worker's session, wake-up on
 * new work, and rate windows shared by workers in different transactions (processes). One table of
 * items of its own, the shape every queue user has (state, holder, lease).
 */
const ITEMS = { table: 'public.queue_items', key: ['id'] } as const;
const WINDOWS = 'public.queue_windows';

let database: TestDatabase;
let db: Db;
const opened: QueueSession[] = [];

const open = async (name: string, channels: string[] = [], onWork: () => void = () => undefined) => {
  const session = await QueueSession.open(db, name, channels, onWork);
  opened.push(session);
  return session;
};

/** a session-leased claim: queued items, or running ones whose holder is gone (or lease passed) */
const claimAs = (session: QueueSession, limit = 10) =>
  claimItems<{ id: number }>(db, ITEMS, {
    due: `item.state = 'queued' OR (item.state = 'running' AND ${leaseLapsed('item.claimed_by', 'item.lease_until', 'now()')})`,
    order: 'item.id',
    set: `state = 'running', claimed_by = $1, lease_until = now() + interval '1 hour'`,
    returning: 't.id',
    values: [session.key.toString()],
    limit,
  });

const add = async (q: Pick<Db, 'query'>, ids: number[], tenant = 't1') =>
  q.query(`INSERT INTO ${ITEMS.table} (id, tenant) SELECT unnest($1::int[]), $2`, [ids, tenant]);

beforeAll(async () => {
  database = await createTestDatabase('queue', { poolSize: 8 });
  db = database.db;
  await db.query(`CREATE TABLE ${ITEMS.table} (id int PRIMARY KEY, tenant text NOT NULL, state text NOT NULL DEFAULT 'queued',
    claimed_by bigint, lease_until timestamptz);
    CREATE TABLE ${WINDOWS} (scope text PRIMARY KEY, window_start timestamptz NOT NULL, used int NOT NULL)`);
});

afterAll(async () => {
  for (const s of opened) await s.close();
  await database?.drop();
});

describe('leases tied to the worker session', () => {
  it('given items claimed by a worker whose connection is then terminated, when another worker claims, then it gets them at once (not after the 1 h lease)', async () => {
    await db.query(`TRUNCATE ${ITEMS.table}`);
    await add(db, [1, 2, 3]);
    const lost = await open('queue-test-lost');
    const other = await open('queue-test-other');
    expect((await claimAs(lost)).map((r) => r.id).sort()).toEqual([1, 2, 3]);
    // while the holder lives, its lease holds
    expect(await claimAs(other)).toEqual([]);

    await db.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE '%/queue-test-lost' AND datname = current_database()`,
    );

    const reclaimed = await pollUntil(
      () => claimAs(other),
      (rows) => rows.length > 0,
      { timeoutMs: 15_000, what: 'the lost worker’s items claimable' },
    );
    expect(reclaimed.map((r) => r.id).sort()).toEqual([1, 2, 3]);
  });
});

describe('wake-up on new work', () => {
  it('given an idle worker polling once in 10 minutes, when work is added with its wake-up, then it is taken within seconds', async () => {
    await db.query(`TRUNCATE ${ITEMS.table}`);
    let steps = 0;
    let taken: number[] = [];
    let wake: () => void = () => undefined;
    const session = await open('queue-test-wake', ['queue_test_work'], () => wake());
    const loop = startLoop(
      async () => {
        steps += 1;
        const claimed = await claimAs(session);
        taken = [...taken, ...claimed.map((r) => r.id)];
        return claimed.length > 0;
      },
      { idleMs: 600_000 },
    );
    wake = () => loop.wake();
    try {
      // the first look found nothing: the worker sleeps
      await pollUntil(
        async () => steps,
        (n) => n >= 1,
        { timeoutMs: 15_000, what: 'the first idle step' },
      );
      await inTransaction(db, async (tx) => {
        await add(tx, [10]);
        await tx.query(wakeSql('queue_test_work'));
      });

      await pollUntil(
        async () => taken,
        (ids) => ids.includes(10),
        { timeoutMs: 20_000, what: 'the new item taken' },
      );
    } finally {
      await loop.stop().catch(() => undefined);
    }
  });
});

describe('rate windows shared by every worker', () => {
  /** one runner's claim: pick due items whose window has room, admit them in the shared windows, mark them */
  const claimWithin = (limit: number, batch: number): Promise<number[]> =>
    inTransaction(db, async (tx) => {
      const now = new Date();
      const { rows } = await tx.query<{ id: number; tenant: string }>(
        pickSql(ITEMS, {
          columns: 'item.id, item.tenant',
          due: `item.state = 'queued' AND NOT ${windowFull(WINDOWS, `'t:' || item.tenant`, limit, now)}`,
          order: 'item.id',
          limit: batch,
        }),
      );
      const candidates: RateCandidate[] = rows.map((r) => ({
        id: String(r.id),
        scopes: [{ key: `t:${r.tenant}`, limit }],
      }));
      const { admitted, record } = await admitInWindows(tx, WINDOWS, candidates, now);
      const ids = [...admitted].map(Number);
      if (ids.length) await tx.query(`UPDATE ${ITEMS.table} SET state = 'running' WHERE id = ANY($1::int[])`, [ids]);
      if (record) await tx.query(record);
      return ids;
    });

  it('given two runners claiming side by side, when a tenant has more work than its window allows, then together they take exactly the window (the other tenant unaffected)', async () => {
    await db.query(`TRUNCATE ${ITEMS.table}; TRUNCATE ${WINDOWS}`);
    await add(
      db,
      Array.from({ length: 12 }, (_, i) => i + 1),
      't1',
    );
    await add(db, [101, 102, 103], 't2');
    const runner = async () => {
      const taken: number[] = [];
      for (let i = 0; i < 4; i += 1) taken.push(...(await claimWithin(5, 3)));
      return taken;
    };

    // one runner, then the other: the second sees the window the first used
    const first = await claimWithin(5, 3);
    const second = await claimWithin(5, 3);
    const [a, b] = await Promise.all([runner(), runner()]);

    expect(first).toEqual([1, 2, 3]);
    expect(second).toEqual([4, 5]);
    const taken = [...first, ...second, ...a, ...b];
    expect(taken.filter((id) => id <= 12)).toHaveLength(5);
    expect(taken.filter((id) => id > 100).sort()).toEqual([101, 102, 103]);
    expect(new Set(taken).size).toBe(taken.length);
  });
});
