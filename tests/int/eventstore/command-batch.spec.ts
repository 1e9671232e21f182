import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Decider } from '../../../domain/shared/decider';
import { entityIdOf, streamIdOf } from '../../../domain/shared/event';
import { defineErrors, DomainError } from '../../../domain/shared/errors';
import { defineAggregate } from '../../../infra/eventstore/aggregate';
import type { BatchableCommand, CommandAnswer } from '../../../infra/eventstore/command-batch';
import { CommandRunner, defaultRunnerOptions } from '../../../infra/eventstore/command-runner';
import type { AppendRequest } from '../../../infra/eventstore/event-store';
import { EventStore } from '../../../infra/eventstore/event-store';
import type { IdempotencyRequest } from '../../../infra/eventstore/idempotency';
import type { UnitOfWork } from '../../../infra/eventstore/unit-of-work';
import { inTransaction } from '../../../infra/postgres/db';
import { pipelined } from '../../../infra/postgres/pipeline';
import type { Projection } from '../../../infra/projections/projection';
import { sql } from '../../../infra/projections/projection';
import { ProjectionEngine } from '../../../infra/projections/engine';
import { systemClock, uuidV7Ids } from '../../../infra/runtime/clock';
import type { TestDatabase } from '../../support/db';
import { createTestDatabase } from '../../support/db';
import { pollUntil } from '../../support/poll';

/*
 * Group commit (infra/eventstore/command-batch.ts) against PostgreSQL, on an account of our own
 * whose decider refuses to go below zero. The runner is built with one batch in flight at a time,
 * so that commands submitted while a batch runs form the next one: a "gate" command that waits in
 * its fn holds the batcher while a test queues the commands of the batch it means.
 */

type AccountState = { value: number };
type AccountCommand = { type: 'Add'; by: number };
type AccountEvent = { type: 'test.account.changed'; data: { by: number; value: number } };

const accountErrors = defineErrors({
  belowZero: (value: number, by: number) => ({
    status: 422,
    suffix: 'below-zero',
    title: 'Below zero',
    detail: `${value} + ${by} would go below zero.`,
  }),
});

const accountDecider: Decider<AccountState, AccountCommand, AccountEvent> = {
  initialState: () => ({ value: 0 }),
  evolve: (_s, e) => ({ value: e.data.value }),
  decide: (c, s) => {
    if (s.value + c.by < 0) throw accountErrors.belowZero(s.value, c.by);
    return [{ type: 'test.account.changed', data: { by: c.by, value: s.value + c.by } }];
  },
};
const Account = defineAggregate({ name: 'test.account', decider: accountDecider, stateSchema: 'account.v1' });

/** inline, so that the batch's projection statements are checked too (evolve only: statementsFor's default path) */
const accounts: Projection<'test_accounts'> = {
  name: 'test.accounts',
  version: 1,
  mode: 'inline',
  handles: ['test.account.changed'],
  tables: {
    test_accounts: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, id text NOT NULL, value bigint NOT NULL, version int NOT NULL, PRIMARY KEY (tenant_id, id))`,
    ],
  },
  evolve: (e, t) => [
    sql(
      `INSERT INTO ${t.test_accounts} (tenant_id, id, value, version) VALUES ($1, $2, $3, $4)
      ON CONFLICT (tenant_id, id) DO UPDATE SET value = EXCLUDED.value, version = EXCLUDED.version WHERE ${t.test_accounts}.version < EXCLUDED.version`,
      e.tenantId,
      entityIdOf(e.streamId),
      (e.data as { value: number }).value,
      e.streamVersion,
    ),
  ],
};

const TENANT = 'tenant-a';
const meta = { tenantId: TENANT, actorId: 'u1', traceId: 'trace-1', correlationId: 'corr-1', causationId: null };
let t: TestDatabase;
let store: EventStore;
let runner: CommandRunner;

beforeAll(async () => {
  t = await createTestDatabase('batch');
  store = new EventStore(systemClock, uuidV7Ids);
  const engine = new ProjectionEngine(t.db, store, [accounts]);
  await engine.prepare();
  runner = new CommandRunner(t.db, store, engine, { ...defaultRunnerOptions, batch: { maxSize: 64, concurrency: 1 } });
});
afterAll(async () => t?.drop());

const streamOf = (account: string) => streamIdOf('test.account', TENANT, account);

const idem = (key: string, requestHash = 'same-request'): IdempotencyRequest => ({
  key,
  requestHash,
  render: (result) => ({ status: 200, contentType: 'application/json', body: Buffer.from(JSON.stringify(result)) }),
  // as the HTTP edge does: deterministic 4xx refusals are remembered, 409 and 429 are not
  renderError: (e) =>
    e.status >= 400 && e.status < 500 && e.status !== 409 && e.status !== 429
      ? {
          status: e.status,
          contentType: 'application/problem+json',
          body: Buffer.from(JSON.stringify({ suffix: e.suffix, detail: e.detail })),
        }
      : null,
});

const addTo = async (uow: UnitOfWork, account: string, by: number) => {
  const loaded = await uow.load(Account, streamOf(account), { lock: true });
  const { state } = uow.decide(Account, loaded, { type: 'Add', by });
  return { account, value: state.value };
};

interface AddOptions {
  key?: string;
  hash?: string;
  runs?: { n: number };
  fail?: Error;
}
const add = (account: string, by: number, o: AddOptions = {}): BatchableCommand & { key: string } => {
  const key = o.key ?? randomUUID();
  return {
    key,
    meta,
    idem: idem(key, o.hash),
    locks: [streamOf(account)],
    fn: async (uow) => {
      if (o.runs) o.runs.n += 1;
      if (o.fail) throw o.fail;
      return addTo(uow, account, by);
    },
  };
};

const bodyOf = (a: CommandAnswer) => JSON.parse(a.body.toString()) as Record<string, unknown>;

/**
 * Holds the batcher with a command whose fn waits: the commands submitted meanwhile form the next
 * batch, all of them together. submitBatch submits them in order and lets the gate go.
 */
const submitBatch = async (commands: BatchableCommand[]): Promise<PromiseSettledResult<CommandAnswer>[]> => {
  let open!: () => void;
  const gate = new Promise<void>((r) => {
    open = r;
  });
  let started!: () => void;
  const running = new Promise<void>((r) => {
    started = r;
  });
  const gateAccount = `gate-${randomUUID()}`;
  const blocker = runner.runBatched({
    ...add(gateAccount, 1),
    fn: async (uow) => {
      started();
      await gate;
      return addTo(uow, gateAccount, 1);
    },
  });
  await running;
  const settled = Promise.allSettled(commands.map((c) => runner.runBatched(c)));
  open();
  await blocker;
  return settled;
};

const fulfilled = (r: PromiseSettledResult<CommandAnswer> | undefined): CommandAnswer => {
  if (r?.status !== 'fulfilled')
    throw new Error(`expected an answer, got ${r?.status === 'rejected' ? String(r.reason) : 'nothing'}`);
  return r.value;
};
const rejected = (r: PromiseSettledResult<CommandAnswer> | undefined): unknown => {
  if (r?.status !== 'rejected') throw new Error(`expected a rejection, got ${r ? JSON.stringify(r) : 'nothing'}`);
  return r.reason;
};

const eventsOf = async (account: string) =>
  (
    await t.db.query<{ stream_version: number; tx: string; data: { by: number; value: number } }>(
      'SELECT stream_version, transaction_id::text AS tx, data FROM es.events WHERE stream_id = $1 ORDER BY stream_version',
      [streamOf(account)],
    )
  ).rows;
const recordOf = async (key: string) =>
  (
    await t.db.query<{ request_hash: string; response_status: number; response_body: Buffer }>(
      'SELECT request_hash, response_status, response_body FROM es.idempotency WHERE tenant_id = $1 AND idempotency_key = $2',
      [TENANT, key],
    )
  ).rows[0];
const projected = async (account: string) =>
  (
    await t.db.query<{ value: string; version: number }>(
      'SELECT value, version FROM rm.test_accounts WHERE tenant_id = $1 AND id = $2',
      [TENANT, account],
    )
  ).rows[0];

describe('given concurrency 1 and 20 commands on one stream submitted at once', () => {
  it('when they run, then they share two transactions, each sees the ones before it, and every event is there once at consecutive versions', async () => {
    const commands = Array.from({ length: 20 }, (_, i) => add('a', i + 1));
    const answers = await Promise.all(commands.map((c) => runner.runBatched(c)));

    // the first runs alone (nothing was in flight); the 19 that arrived meanwhile share the next transaction
    const events = await eventsOf('a');
    expect(new Set(events.map((e) => e.tx)).size).toBe(2);
    expect(new Set(events.slice(1).map((e) => e.tx)).size).toBe(1);

    const totals = Array.from({ length: 20 }, (_, i) => ((i + 1) * (i + 2)) / 2);
    expect(answers.map((a) => [a.status, a.replayed])).toEqual(answers.map(() => [200, false]));
    expect(answers.map((a) => bodyOf(a).value)).toEqual(totals);
    expect(events.map((e) => e.stream_version)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(events.map((e) => e.data)).toEqual(totals.map((value, i) => ({ by: i + 1, value })));

    expect(await store.head(t.db, streamOf('a'))).toMatchObject({
      version: 20,
      stateSchema: 'account.v1',
      state: { value: 210 },
    });
    expect(await projected('a')).toEqual({ value: '210', version: 20 });
    for (const [i, c] of commands.entries()) {
      const record = await recordOf(c.key);
      expect(record?.response_status).toBe(200);
      expect(JSON.parse(record!.response_body.toString())).toEqual({ account: 'a', value: totals[i] });
    }
  });

  it('when the batches are at most 4 commands, then 10 commands take 1 + 4 + 4 + 1 transactions', async () => {
    const small = new CommandRunner(t.db, store, null, {
      ...defaultRunnerOptions,
      batch: { maxSize: 4, concurrency: 1 },
    });
    const answers = await Promise.all(Array.from({ length: 10 }, () => small.runBatched(add('small', 1))));
    expect(answers.map((a) => bodyOf(a).value)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    const events = await eventsOf('small');
    const sizes = [...events.reduce((m, e) => m.set(e.tx, (m.get(e.tx) ?? 0) + 1), new Map<string, number>()).values()];
    expect(sizes).toEqual([1, 4, 4, 1]);
  });
});

describe('given a batch with a refused command in the middle', () => {
  it('when it commits, then the others are committed on the state their predecessors left, and the refused one records only its refusal', async () => {
    await runner.runBatched(add('b', 5));
    const refusedRuns = { n: 0 };
    const commands = [add('b', -3), add('b', -10, { runs: refusedRuns }), add('b', 4), add('b', -6)];
    const results = await submitBatch(commands);

    const answers = results.map(fulfilled);
    expect(answers.map((a) => [a.status, a.replayed])).toEqual([
      [200, false],
      [422, false],
      [200, false],
      [200, false],
    ]);
    expect(bodyOf(answers[0]!).value).toBe(2);
    expect(bodyOf(answers[1]!)).toMatchObject({ suffix: 'below-zero', detail: '2 + -10 would go below zero.' });
    // -6 is only possible on the +4 decided before it in the same batch
    expect(bodyOf(answers[2]!).value).toBe(6);
    expect(bodyOf(answers[3]!).value).toBe(0);

    const events = await eventsOf('b');
    expect(events.map((e) => [e.stream_version, e.data.by, e.data.value])).toEqual([
      [1, 5, 5],
      [2, -3, 2],
      [3, 4, 6],
      [4, -6, 0],
    ]);
    expect(new Set(events.slice(1).map((e) => e.tx)).size).toBe(1);
    expect(await projected('b')).toEqual({ value: '0', version: 4 });

    const refusal = await recordOf(commands[1]!.key);
    expect(refusal?.response_status).toBe(422);
    expect(refusal!.response_body.equals(answers[1]!.body)).toBe(true);
    for (const i of [0, 2, 3]) expect((await recordOf(commands[i]!.key))?.response_status).toBe(200);

    // the refusal is remembered: the same request again is answered from the record, not run
    const again = await runner.runBatched(add('b', -10, { key: commands[1]!.key, runs: refusedRuns }));
    expect(again).toMatchObject({ status: 422, replayed: true });
    expect(again.body.equals(answers[1]!.body)).toBe(true);
    expect(refusedRuns.n).toBe(1);
    expect(await eventsOf('b')).toHaveLength(4);
  });
});

describe('given one idempotency key twice in one batch', () => {
  it('when the batch runs, then it executes once, the duplicate is 409 in progress, and a later retry replays the stored bytes', async () => {
    const runs = { n: 0 };
    const key = randomUUID();
    const results = await submitBatch([add('c', 7, { key, runs }), add('c', 7, { key, runs })]);

    const first = fulfilled(results[0]);
    expect(first).toMatchObject({ status: 200, replayed: false });
    const duplicate = rejected(results[1]);
    expect(duplicate).toBeInstanceOf(DomainError);
    expect(duplicate).toMatchObject({
      status: 409,
      suffix: 'idempotency-conflict',
      extensions: { reason: 'in_progress' },
    });
    expect(runs.n).toBe(1);
    expect(await eventsOf('c')).toHaveLength(1);

    const again = await runner.runBatched(add('c', 7, { key, runs }));
    expect(again).toMatchObject({ status: 200, replayed: true });
    expect(again.body.equals(first.body)).toBe(true);
    expect(runs.n).toBe(1);
    expect(await eventsOf('c')).toHaveLength(1);
  });
});

describe('given a key already used', () => {
  it('when it comes back with another request in a batch, then it is refused with 409 idempotency-conflict and the others commit', async () => {
    const key = randomUUID();
    const original = await runner.runBatched(add('d', 1, { key, hash: 'first body' }));
    const runs = { n: 0 };
    const other = add('d', 2);
    const results = await submitBatch([add('d', 100, { key, hash: 'another body', runs }), other]);

    const reused = rejected(results[0]);
    expect(reused).toBeInstanceOf(DomainError);
    expect(reused).toMatchObject({ status: 409, suffix: 'idempotency-conflict', title: 'Idempotency key reused' });
    expect(runs.n).toBe(0);
    expect(bodyOf(fulfilled(results[1])).value).toBe(3);
    expect((await eventsOf('d')).map((e) => e.data.by)).toEqual([1, 2]);
    const record = await recordOf(key);
    expect(record?.request_hash).toBe('first body');
    expect(record!.response_body.equals(original.body)).toBe(true);
  });

  it('when another transaction holds the key, then it is refused with 409 in progress without running, and runs once the key is free', async () => {
    const key = randomUUID();
    const runs = { n: 0 };
    const holder = await t.db.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 7))', [`${TENANT}:${key}`]);
      await expect(runner.runBatched(add('d2', 1, { key, runs }))).rejects.toMatchObject({
        status: 409,
        extensions: { reason: 'in_progress' },
      });
      expect(runs.n).toBe(0);
      expect(await recordOf(key)).toBeUndefined();
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    expect(await runner.runBatched(add('d2', 1, { key, runs }))).toMatchObject({ status: 200, replayed: false });
    expect(runs.n).toBe(1);
  });
});

describe('given a batch in which something unexpected fails', () => {
  it('when a command throws a plain Error, then the batch falls back: the others are answered one by one and only that command rejects', async () => {
    const ok1 = add('e1', 1);
    const bad = add('e2', 1, { fail: new Error('boom') });
    const ok2 = add('e3', 1);
    const results = await submitBatch([ok1, bad, ok2]);

    expect(fulfilled(results[0])).toMatchObject({ status: 200, replayed: false });
    expect(fulfilled(results[2])).toMatchObject({ status: 200, replayed: false });
    const error = rejected(results[1]);
    expect(error).not.toBeInstanceOf(DomainError);
    expect((error as Error).message).toBe('boom');

    const [e1, e3] = [await eventsOf('e1'), await eventsOf('e3')];
    expect(e1.map((e) => e.data)).toEqual([{ by: 1, value: 1 }]);
    expect(e3.map((e) => e.data)).toEqual([{ by: 1, value: 1 }]);
    expect(await eventsOf('e2')).toEqual([]);
    // answered on the ordinary path: a transaction each, not the batch's
    expect(e1[0]!.tx).not.toBe(e3[0]!.tx);
    expect((await recordOf(ok1.key))?.response_status).toBe(200);
    expect((await recordOf(ok2.key))?.response_status).toBe(200);
    expect(await recordOf(bad.key)).toBeUndefined();

    // the batcher keeps working after a fallback
    expect(bodyOf(await runner.runBatched(add('e1', 1))).value).toBe(2);
  });

  it('when its appends meet a stream another transaction created meanwhile, then it rolls back and each command runs alone on what is there', async () => {
    const created = streamOf('f-new');
    const other = await t.db.connect();
    let results: PromiseSettledResult<CommandAnswer>[];
    try {
      // another writer creates the stream and has not committed yet: the batch's lock of it finds no row
      await other.query('BEGIN');
      await store.append(
        other,
        [
          {
            streamId: created,
            expectedVersion: 0,
            events: [{ type: 'test.account.changed', data: { by: 7, value: 7 } }],
            state: { value: { value: 7 }, schema: 'account.v1' },
          },
        ],
        meta,
      );
      const batch = submitBatch([add('f-other', 1), add('f-new', 1)]);
      // the batch's second round trip waits on the uncommitted stream row; then the writer commits
      await pollUntil(
        async () =>
          Number(
            (
              await t.db.query<{ n: string }>(
                "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
              )
            ).rows[0]?.n,
          ),
        (waiting) => waiting > 0,
        { timeoutMs: 10_000, everyMs: 10, what: 'the batch waiting on the new stream' },
      );
      await other.query('COMMIT');
      results = await batch;
    } finally {
      await other.query('ROLLBACK').catch(() => undefined);
      other.release();
    }

    expect(bodyOf(fulfilled(results[0])).value).toBe(1);
    // alone, the command loads the stream as the other writer left it
    expect(bodyOf(fulfilled(results[1])).value).toBe(8);
    const events = await eventsOf('f-new');
    expect(events.map((e) => [e.stream_version, e.data.value])).toEqual([
      [1, 7],
      [2, 8],
    ]);
    expect((await eventsOf('f-other')).map((e) => e.data.value)).toEqual([1]);
    expect(events[1]!.tx).not.toBe((await eventsOf('f-other'))[0]!.tx);
  });
});

describe('EventStore.prepareAppends', () => {
  const changed = (...values: number[]) =>
    values.map((value) => ({ type: 'test.account.changed', data: { by: 0, value } }));
  const request = (account: string, expectedVersion: number, values: number[]): AppendRequest => ({
    streamId: streamOf(account),
    expectedVersion,
    events: changed(...values),
    state: { value: { value: values[values.length - 1] }, schema: 'account.v1' },
  });
  const streamRow = async (account: string) =>
    (await t.db.query('SELECT version, state FROM es.streams WHERE stream_id = $1', [streamOf(account)])).rows[0] as
      { version: number; state: unknown } | undefined;

  it('given a stream another append moved past the expected version, when the statement runs, then it fails with a unique violation and writes nothing', async () => {
    await inTransaction(t.db, (tx) => store.append(tx, [request('g', 0, [1])], meta));
    // read at version 1; meanwhile another writer appends
    await inTransaction(t.db, (tx) => store.append(tx, [request('g', 1, [2])], meta));
    const { statements } = store.prepareAppends(
      [
        { request: request('g-fresh', 0, [10]), meta },
        { request: request('g', 1, [3, 4]), meta },
      ],
      new Date(),
    );
    await expect(inTransaction(t.db, (tx) => pipelined(tx, statements))).rejects.toMatchObject({ code: '23505' });

    expect(await streamRow('g')).toEqual({ version: 2, state: { value: 2 } });
    expect((await eventsOf('g')).map((e) => e.data.value)).toEqual([1, 2]);
    expect(await streamRow('g-fresh')).toBeUndefined();
    expect(await eventsOf('g-fresh')).toEqual([]);
  });

  it('given a stream that exists, when the statement creates it (expected version 0), then it fails with a unique violation and writes nothing', async () => {
    await inTransaction(t.db, (tx) => store.append(tx, [request('h', 0, [1])], meta));
    const { statements } = store.prepareAppends([{ request: request('h', 0, [5]), meta }], new Date());
    await expect(inTransaction(t.db, (tx) => pipelined(tx, statements))).rejects.toMatchObject({ code: '23505' });
    expect(await streamRow('h')).toEqual({ version: 1, state: { value: 1 } });
    expect((await eventsOf('h')).map((e) => e.data.value)).toEqual([1]);
  });

  it('given appends at their versions, when the statement runs, then the events are stored as returned, whose position and transaction id throw until then', async () => {
    await inTransaction(t.db, (tx) => store.append(tx, [request('i', 0, [1])], meta));
    const at = new Date('2030-01-02T03:04:05.678Z');
    const { statements, events } = store.prepareAppends(
      [
        { request: request('i', 1, [2, 3]), meta },
        { request: request('i-new', 0, [9]), meta: { ...meta, actorId: 'u2' } },
        { request: request('i', 3, [4]), meta },
      ],
      at,
    );
    expect(() => events[0]!.position).toThrow(/assigned by PostgreSQL/);
    expect(() => events[0]!.transactionId).toThrow(/assigned by PostgreSQL/);
    await inTransaction(t.db, (tx) => pipelined(tx, statements));

    expect(await streamRow('i')).toEqual({ version: 4, state: { value: 4 } });
    expect(await streamRow('i-new')).toEqual({ version: 1, state: { value: 9 } });
    const stored = [
      ...(await store.readStream(t.db, streamOf('i'), 2)),
      ...(await store.readStream(t.db, streamOf('i-new'))),
    ];
    const fields = (e: (typeof events)[number]) => ({
      eventId: e.eventId,
      type: e.type,
      schemaVersion: e.schemaVersion,
      tenantId: e.tenantId,
      actorId: e.actorId,
      traceId: e.traceId,
      causationId: e.causationId,
      correlationId: e.correlationId,
      occurredAt: e.occurredAt,
      streamId: e.streamId,
      streamVersion: e.streamVersion,
      data: e.data,
    });
    const byId = new Map(stored.map((e) => [e.eventId, e]));
    expect(events.map((e) => fields(byId.get(e.eventId)!))).toEqual(events.map(fields));
    expect(events.map((e) => [entityIdOf(e.streamId), e.streamVersion, e.actorId, e.occurredAt])).toEqual([
      ['i', 2, 'u1', at.toISOString()],
      ['i', 3, 'u1', at.toISOString()],
      ['i-new', 1, 'u2', at.toISOString()],
      ['i', 4, 'u1', at.toISOString()],
    ]);
    // one statement, so one transaction
    expect(new Set(stored.map((e) => e.transactionId)).size).toBe(1);
  });

  it('given event data and state with a $1, quotes, backslashes, unicode and a megabyte of text, when the statements run with standard_conforming_strings off, then they read back exactly', async () => {
    const awkward = { text: `$1 it's "q" C:\\x41\\ 水🙂 $$`, big: "x\\'$2".repeat(200_000) };
    const { statements } = store.prepareAppends(
      [
        {
          request: {
            streamId: streamOf('awkward'),
            expectedVersion: 0,
            events: [{ type: 'test.account.changed', data: awkward }],
            state: { value: awkward, schema: 'account.v1' },
          },
          meta: { ...meta, traceId: "trace'$1\\" },
        },
      ],
      new Date(),
    );
    const client = await t.db.connect();
    try {
      await client.query('SET standard_conforming_strings = off');
      await pipelined(
        client,
        ['BEGIN', ...statements, 'COMMIT'].map((s) => (typeof s === 'string' ? { text: s, values: [] } : s)),
      );
      await client.query('RESET standard_conforming_strings');
    } finally {
      client.release();
    }
    const [event] = await store.readStream(t.db, streamOf('awkward'));
    expect(event!.data).toEqual(awkward);
    expect(event!.traceId).toBe("trace'$1\\");
    expect((await streamRow('awkward'))?.state).toEqual(awkward);
  });

  it('given appends to one stream that do not follow each other, or an unknown expected version, then it refuses to prepare them', () => {
    expect(() =>
      store.prepareAppends(
        [
          { request: request('j', 1, [1]), meta },
          { request: request('j', 3, [2]), meta },
        ],
        new Date(),
      ),
    ).toThrow(/do not follow each other/);
    expect(() =>
      store.prepareAppends([{ request: { ...request('j', 1, [1]), expectedVersion: 'any' }, meta }], new Date()),
    ).toThrow(/expected versions/);
  });
});

describe('given two batches in flight at once (concurrency 2)', () => {
  it('when a command waits for a stream an in-flight batch holds, then a later command on its other stream waits behind it (arrival order per stream)', async () => {
    const two = new CommandRunner(t.db, store, null, {
      ...defaultRunnerOptions,
      batch: { maxSize: 64, concurrency: 2 },
    });
    const held = `held-${randomUUID()}`;
    const shared = `shared-${randomUUID()}`;
    let open!: () => void;
    const gate = new Promise<void>((r) => {
      open = r;
    });
    let started!: () => void;
    const running = new Promise<void>((r) => {
      started = r;
    });
    const blocker = two.runBatched({
      ...add(held, 1),
      fn: async (uow) => {
        started();
        await gate;
        return addTo(uow, held, 1);
      },
    });
    await running;
    // given X needs the held stream and the shared one, and Y (arriving after X) only the shared one
    const x = two.runBatched({ ...add(shared, 1), locks: [streamOf(shared), streamOf(held)] });
    const y = two.runBatched(add(shared, 10));
    // deliberately let both be queued behind the held stream before it opens (a wait inside the batcher, not on the server)
    await new Promise((r) => setTimeout(r, 50));
    open();
    await blocker;
    // then X ran first on the shared stream, although Y's stream was free while X waited
    expect(bodyOf(await x)).toMatchObject({ value: 1 });
    expect(bodyOf(await y)).toMatchObject({ value: 11 });
  });
});

describe('a step after the commit (UnitOfWork.afterCommit)', () => {
  /** what another connection sees of the account when the step runs: proof the commit came first */
  const committedValue = async (account: string) =>
    Number(
      (
        await t.db.query<{ value: string }>('SELECT value FROM rm.test_accounts WHERE tenant_id = $1 AND id = $2', [
          TENANT,
          account,
        ])
      ).rows[0]?.value ?? -1,
    );
  const withStep = (account: string, by: number, seen: number[]) => async (uow: UnitOfWork) => {
    uow.afterCommit(async () => {
      seen.push(await committedValue(account));
    });
    return addTo(uow, account, by);
  };

  it('runs after the COMMIT and before the command answers, on every path (alone, keyed, batched)', async () => {
    const account = `after-${randomUUID()}`;
    const seen: number[] = [];
    await runner.run(meta, withStep(account, 5, seen));
    expect(seen).toEqual([5]);
    await runner.runIdempotent(meta, idem(randomUUID()), withStep(account, 2, seen));
    expect(seen).toEqual([5, 7]);
    await runner.runBatched({ ...add(account, 1), fn: withStep(account, 1, seen) });
    expect(seen).toEqual([5, 7, 8]);
  });

  it('never runs for a command that was refused or rolled back', async () => {
    const account = `refused-${randomUUID()}`;
    const seen: number[] = [];
    await expect(runner.run(meta, withStep(account, -1, seen))).rejects.toThrow(DomainError);
    expect((await runner.runIdempotent(meta, idem(randomUUID()), withStep(account, -1, seen))).status).toBe(422);
    expect((await runner.runBatched({ ...add(account, -1), fn: withStep(account, -1, seen) })).status).toBe(422);
    expect(seen).toEqual([]);
  });

  it('is reported when it fails, and the committed command still answers', async () => {
    const failures: unknown[] = [];
    const reporting = new CommandRunner(t.db, store, null, {
      ...defaultRunnerOptions,
      onAfterCommitFailure: (e) => failures.push(e),
    });
    const account = `failing-${randomUUID()}`;
    const answer = await reporting.run(meta, async (uow) => {
      uow.afterCommit(async () => {
        throw new Error('shared cache down');
      });
      return addTo(uow, account, 3);
    });
    expect(answer).toEqual({ account, value: 3 });
    expect(failures).toEqual([expect.objectContaining({ message: 'shared cache down' })]);
  });
});
