import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streamIdOf } from '../../../domain/shared/event';
import { StreamVersionConflict } from '../../../infra/eventstore/errors';
import { EventStore } from '../../../infra/eventstore/event-store';
import { CommandRunner } from '../../../infra/eventstore/command-runner';
import { inTransaction } from '../../../infra/postgres/db';
import { systemClock, uuidV7Ids } from '../../../infra/runtime/clock';
import type { TestDatabase } from '../../support/db';
import { createTestDatabase } from '../../support/db';
import { Counter, handleTally } from '../../support/tally/commands';

let t: TestDatabase;
let store: EventStore;
const meta = { tenantId: 'tenant-a', actorId: 'u1', traceId: 'trace-1', correlationId: 'corr-1', causationId: null };

beforeAll(async () => {
  t = await createTestDatabase('es');
  store = new EventStore(systemClock, uuidV7Ids);
});
afterAll(async () => t.drop());

const append = (streamId: string, expectedVersion: number | 'any', n = 1) =>
  inTransaction(t.db, (tx) =>
    store.append(
      tx,
      [
        {
          streamId,
          expectedVersion,
          events: Array.from({ length: n }, (_, i) => ({ type: 'tally.counter.incremented', data: { i } })),
        },
      ],
      meta,
    ),
  );

describe('a new stream', () => {
  it('takes events at expected version 0 and numbers them from 1, with the full envelope', async () => {
    const stored = await append('s:tenant-a:one', 0, 3);
    expect(stored.map((e) => e.streamVersion)).toEqual([1, 2, 3]);
    const [first] = await store.readStream(t.db, 's:tenant-a:one');
    expect(first).toMatchObject({
      type: 'tally.counter.incremented',
      schemaVersion: 1,
      tenantId: 'tenant-a',
      actorId: 'u1',
      traceId: 'trace-1',
      correlationId: 'corr-1',
      causationId: null,
      streamId: 's:tenant-a:one',
      streamVersion: 1,
      data: { i: 0 },
    });
    expect(first!.eventId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/);
    expect(Date.parse(first!.occurredAt)).not.toBeNaN();
  });

  it('refuses expected version 0 once the stream exists', async () => {
    await expect(append('s:tenant-a:one', 0)).rejects.toBeInstanceOf(StreamVersionConflict);
  });
});

describe('a stream at version 3', () => {
  it('refuses a stale expected version with a typed conflict', async () => {
    await expect(append('s:tenant-a:one', 2)).rejects.toMatchObject({
      name: 'StreamVersionConflict',
      status: 409,
      expected: 2,
      actual: 3,
    });
  });

  it('lets exactly one of many concurrent appends at the same expected version win', async () => {
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => append('s:tenant-a:one', 3)));
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r) => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(19);
    for (const r of lost) expect(r.reason).toBeInstanceOf(StreamVersionConflict);
    expect((await store.head(t.db, 's:tenant-a:one'))?.version).toBe(4);
  });
});

describe('appends on one connection', () => {
  it('run one prepared statement, parsed once and then only executed', async () => {
    // given a connection of the pool (earlier tests may have appended on it)
    const client = await t.db.connect();
    const runs = async () =>
      (
        await client.query<{ runs: number }>(
          `SELECT generic_plans + custom_plans AS runs FROM pg_prepared_statements WHERE statement LIKE 'WITH s AS (UPDATE es.streams%'`,
        )
      ).rows.map((r) => Number(r.runs));
    try {
      const before = (await runs())[0] ?? 0;
      // when it appends to a stream five times, each in a transaction of its own
      for (let v = 0; v < 5; v += 1) {
        await client.query('BEGIN');
        await store.append(
          client,
          [
            {
              streamId: 's:tenant-a:prepared',
              expectedVersion: v,
              events: [{ type: 'tally.counter.incremented', data: { v } }],
            },
          ],
          meta,
        );
        await client.query('COMMIT');
      }
      // then the appends at a version (the last four) ran one prepared statement of the connection
      expect(await runs()).toEqual([before + 4]);
      expect((await store.readStream(client, 's:tenant-a:prepared')).map((e) => e.data)).toEqual(
        [0, 1, 2, 3, 4].map((v) => ({ v })),
      );
    } finally {
      client.release();
    }
  });
});

describe('upcasting', () => {
  it('hands readers the newest shape of an event written in an older one', async () => {
    await append('s:tenant-a:up', 0);
    store.upcasters.register('tally.counter.incremented', 2, (d) => ({ ...d, by: 1 }));
    const [e] = await store.readStream(t.db, 's:tenant-a:up');
    expect(e).toMatchObject({ schemaVersion: 2, data: { i: 0, by: 1 } });
    const fresh = new EventStore(systemClock, uuidV7Ids);
    expect((await fresh.readStream(t.db, 's:tenant-a:up'))[0]!.schemaVersion).toBe(1);
  });
});

describe('an aggregate with a long history', () => {
  it('loads from its stored state, not by folding its events', async () => {
    const runner = new CommandRunner(t.db, store, null);
    await runner.run(meta, (uow) => handleTally(uow, { type: 'CreateCounter', counterId: 'long', name: 'long' }));
    for (let i = 0; i < 50; i += 1)
      await runner.run(meta, (uow) => handleTally(uow, { type: 'Increment', counterId: 'long', by: 2 }));
    const streamId = streamIdOf('tally.counter', 'tenant-a', 'long');
    const head = await store.head(t.db, streamId);
    expect(head).toMatchObject({ version: 51, stateSchema: 'counter.v1', state: { status: 'open', value: 100 } });
    // corrupt the events: a load that folded them would notice; a load from state does not read them
    await t.db.query(`UPDATE es.events SET data = '{"counterId":"long","by":0,"value":-1}' WHERE stream_id = $1`, [
      streamId,
    ]);
    const loaded = await runner.run(meta, (uow) => uow.load(Counter, streamId));
    expect(loaded).toMatchObject({ version: 51, state: { value: 100 } });
  });

  it('rebuilds from the events when the stored state has an older shape', async () => {
    const runner = new CommandRunner(t.db, store, null);
    await runner.run(meta, (uow) => handleTally(uow, { type: 'CreateCounter', counterId: 'old', name: 'old' }));
    await runner.run(meta, (uow) => handleTally(uow, { type: 'Increment', counterId: 'old', by: 5 }));
    const streamId = streamIdOf('tally.counter', 'tenant-a', 'old');
    await t.db.query(
      `UPDATE es.streams SET state_schema = 'counter.v0', state = '{"bogus":true}' WHERE stream_id = $1`,
      [streamId],
    );
    const loaded = await runner.run(meta, (uow) => uow.load(Counter, streamId));
    expect(loaded).toMatchObject({ version: 2, state: { status: 'open', value: 5 } });
  });
});

describe('a stream created under an id just minted (uow.fresh)', () => {
  it('is appended without a read, and one that existed after all is a conflict the runner retries with a new id', async () => {
    const runner = new CommandRunner(t.db, store, null);
    await runner.run(meta, (uow) => handleTally(uow, { type: 'CreateCounter', counterId: 'taken', name: 'first' }));
    const minted = ['taken', 'free']; // the first id handed out collides, as a reused id would
    const used: string[] = [];
    const created = await runner.run(meta, async (uow) => {
      const counterId = minted[used.length]!;
      used.push(counterId);
      const counter = uow.fresh(Counter, streamIdOf('tally.counter', uow.meta.tenantId, counterId));
      uow.decide(Counter, counter, { type: 'CreateCounter', counterId, name: 'second' });
      return counterId;
    });
    expect({ created, used }).toEqual({ created: 'free', used: ['taken', 'free'] });
    expect((await store.head(t.db, streamIdOf('tally.counter', 'tenant-a', 'taken')))?.version).toBe(1);
    expect((await store.readStream(t.db, streamIdOf('tally.counter', 'tenant-a', 'taken')))[0]!.data).toMatchObject({
      name: 'first',
    });
  });
});
