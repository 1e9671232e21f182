import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogCheckpoint } from '../../../infra/eventstore/event-store';
import { checkpointOf, EventStore, LOG_START } from '../../../infra/eventstore/event-store';
import { inTransaction } from '../../../infra/postgres/db';
import { pipelined, statement } from '../../../infra/postgres/pipeline';
import { systemClock, uuidV7Ids } from '../../../infra/runtime/clock';
import { compare } from '../../../infra/projections/engine';
import type { TestDatabase } from '../../support/db';
import { createTestDatabase } from '../../support/db';
import { pollUntil } from '../../support/poll';
import { UnitOfWork } from '../../../infra/eventstore/unit-of-work';
import { streamIdOf } from '../../../domain/shared/event';
import { Counter, handleTally } from '../../support/tally/commands';

let t: TestDatabase;
const store = new EventStore(systemClock, uuidV7Ids);
const meta = { tenantId: 'tenant-a', actorId: null, traceId: null, correlationId: null, causationId: null };

beforeAll(async () => {
  t = await createTestDatabase('order');
  await t.db.query('CREATE TABLE public.early_writes (note text)');
});
afterAll(async () => t.drop());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A reader that follows the global log the way the relay and the projectors do. */
const follow = () => {
  const seen: { eventId: string; at: LogCheckpoint }[] = [];
  const errors: unknown[] = [];
  let after = LOG_START;
  let running = true;
  const done = (async () => {
    while (running) {
      const batch = await store.readAll(t.db, after, 500).catch((error: unknown) => {
        errors.push(error);
        return [];
      });
      for (const e of batch) seen.push({ eventId: e.eventId, at: checkpointOf(e) });
      if (batch.length) after = checkpointOf(batch[batch.length - 1]!);
      else await sleep(5); // the reader's own idle pause, as the relay's
    }
  })();
  return {
    seen,
    errors,
    get after() {
      return after;
    },
    stop: async () => {
      running = false;
      await done;
    },
  };
};

describe('the global log while a slow transaction holds events uncommitted', () => {
  it('never lets a reader skip the slow events, in 100 rounds, and delivers in commit order', async () => {
    const reader = follow();
    const written: string[] = [];
    const round = async (r: number) => {
      const client = await t.db.connect();
      await client.query('BEGIN');
      // the slow transaction gets its position first, then commits after 1,000 later appends
      const slow = await store.append(
        client,
        [{ streamId: `slow:tenant-a:${r}`, expectedVersion: 0, events: [{ type: 'tally.slow.written', data: { r } }] }],
        meta,
      );
      const fast = (async () => {
        for (let i = 0; i < 100; i += 1) {
          const events = await inTransaction(t.db, (tx) =>
            store.append(
              tx,
              [
                {
                  streamId: `fast:tenant-a:${r}-${i}`,
                  expectedVersion: 0,
                  events: Array.from({ length: 10 }, (_, k) => ({ type: 'tally.fast.written', data: { r, i, k } })),
                },
              ],
              meta,
            ),
          );
          written.push(...events.map((e) => e.eventId));
        }
      })();
      // the slow transaction deliberately stays open while the fast ones commit past it
      await Promise.all([fast, sleep(2000)]);
      await client.query('COMMIT');
      client.release();
      written.push(...slow.map((e) => e.eventId));
    };
    // ten rounds at a time, so the test keeps to its time budget; each round is independent
    for (let wave = 0; wave < 10; wave += 1)
      await Promise.all(Array.from({ length: 10 }, (_, k) => round(wave * 10 + k)));
    await pollUntil(
      async () => reader.seen.length,
      (n) => n >= written.length,
      // a transaction another test file holds open holds back pg_snapshot_xmin for every reader of the server
      { timeoutMs: 90_000, what: 'every written event read' },
    ).finally(() => reader.stop());

    expect(reader.errors).toEqual([]);
    expect(written).toHaveLength(10 * 10 * 1001);
    const ids = reader.seen.map((s) => s.eventId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(ids)).toEqual(new Set(written));
    for (let i = 1; i < reader.seen.length; i += 1)
      expect(compare(reader.seen[i - 1]!.at, reader.seen[i]!.at)).toBeLessThan(0);
    // commit order is not position order: some events were read after events with higher positions
    const overtaken = reader.seen.some((s, i) => i > 0 && s.at.position < reader.seen[i - 1]!.at.position);
    expect(overtaken).toBe(true);
  }, 240_000);
});

/**
 * The hazard of a transaction id taken early: a command's transaction writes something first (an
 * operational row, a claimed job), which gives it its id; another transaction then commits on a
 * stream; the command reads that commit and appends after it. Ordered by transaction id alone, its
 * events would come before the commit they followed.
 */
describe('a command whose transaction wrote before it read a stream another transaction then moved', () => {
  // a tenant of its own: the test above fills tenant-a's log with 100,100 events
  const hazardMeta = { ...meta, tenantId: 'tenant-h' };
  const counter = (id: string) => streamIdOf('tally.counter', hazardMeta.tenantId, id);
  /**
   * the streams' events as a log reader sees them, once all `count` are visible (a transaction of
   * another test on the same server holds every reader back until it ends)
   */
  const inOrder = (streamIds: string[], count: number) =>
    pollUntil(
      async () =>
        (await store.readAll(t.db, LOG_START, 100_000, { tenantId: hazardMeta.tenantId })).filter((e) =>
          streamIds.includes(e.streamId),
        ),
      (events) => events.length >= count,
      { timeoutMs: 60_000, what: `${count} events of ${streamIds.join(', ')} visible to readers` },
    );
  /** a whole command in its own transaction: load, decide, append, commit */
  const command = (c: Parameters<typeof handleTally>[1]) =>
    inTransaction(t.db, async (tx) => {
      const uow = new UnitOfWork(tx, hazardMeta, store);
      await handleTally(uow, c);
      await uow.flush(null);
    });
  const increment = (id: string) => command({ type: 'Increment', counterId: id, by: 1 });

  /** runs `between` after the early write of a transaction whose command then runs `command` */
  const earlyWriter = async (between: () => Promise<void>, command: (uow: UnitOfWork) => Promise<void>) => {
    const client = await t.db.connect();
    try {
      await client.query('BEGIN');
      await client.query(`INSERT INTO public.early_writes VALUES ('written before the command read anything')`);
      await between();
      const uow = new UnitOfWork(client, hazardMeta, store);
      await command(uow);
      await uow.flush(null);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
  };

  it('orders its events after that commit, in the stream version order, for every reader of the log', async () => {
    const id = counter('hazard-1');
    await command({ type: 'CreateCounter', counterId: 'hazard-1', name: 'n' });
    await earlyWriter(
      () => increment('hazard-1'),
      (uow) => handleTally(uow, { type: 'Increment', counterId: 'hazard-1', by: 1 }).then(() => undefined),
    );
    const events = await inOrder([id], 3);
    expect(events.map((e) => e.streamVersion)).toEqual([1, 2, 3]);
    expect(events.map((e) => (e.data as { value?: number }).value)).toEqual([undefined, 1, 2]);
  });

  it('orders its events after the commits of the streams it loaded without appending to them', async () => {
    const read = counter('hazard-read');
    const written = counter('hazard-written');
    await command({ type: 'CreateCounter', counterId: 'hazard-read', name: 'r' });
    await earlyWriter(
      () => increment('hazard-read'),
      async (uow) => {
        // decides on what it read of one stream, appends to another
        await uow.load(Counter, read);
        await handleTally(uow, { type: 'CreateCounter', counterId: 'hazard-written', name: 'w' });
      },
    );
    const events = await inOrder([read, written], 3);
    expect(events.map((e) => `${e.streamId === read ? 'read' : 'written'} v${e.streamVersion}`)).toEqual([
      'read v1',
      'read v2',
      'written v1',
    ]);
  });

  it('orders the appends of a group commit after the commits it read, whatever its transaction wrote first', async () => {
    const id = counter('hazard-batch');
    await command({ type: 'CreateCounter', counterId: 'hazard-batch', name: 'b' });
    const client = await t.db.connect();
    try {
      await client.query('BEGIN');
      await client.query(`INSERT INTO public.early_writes VALUES ('a claim, before the batch read its heads')`);
      await increment('hazard-batch');
      const head = (await store.head(client, id))!;
      const { statements } = store.prepareAppends(
        [
          {
            request: {
              streamId: id,
              expectedVersion: head.version,
              events: [{ type: 'tally.counter.incremented', data: { counterId: 'hazard-batch', by: 1, value: 2 } }],
              state: { value: { status: 'open', name: 'b', value: 2 }, schema: Counter.stateSchema },
            },
            meta: hazardMeta,
          },
        ],
        new Date(),
      );
      await pipelined(client, [...statements, statement('COMMIT')]);
    } finally {
      client.release();
    }
    expect((await inOrder([id], 3)).map((e) => e.streamVersion)).toEqual([1, 2, 3]);
  });

  it('keeps the plain transaction id when nothing it read is newer (no subtransaction on the common path)', async () => {
    await command({ type: 'CreateCounter', counterId: 'plain', name: 'p' });
    const client = await t.db.connect();
    try {
      await client.query('BEGIN');
      await client.query(`INSERT INTO public.early_writes VALUES ('early, but nothing moves after it')`);
      const uow = new UnitOfWork(client, hazardMeta, store);
      await handleTally(uow, { type: 'Increment', counterId: 'plain', by: 1 });
      const [event] = await uow.flush(null);
      const { rows } = await client.query<{ id: string }>('SELECT pg_current_xact_id()::text AS id');
      expect(event!.transactionId).toBe(BigInt(rows[0]!.id));
      await client.query('COMMIT');
    } finally {
      client.release();
    }
  });
});
