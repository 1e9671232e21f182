/**
 * Event store figures of issue 2:
 *  - single-event appends/s with 8 concurrent writers, p50/p99
 *  - batches of 100 events: events/s, p50/p99 per batch
 *  - command latency (load + decide + append through the CommandRunner) on a stream of 10
 *    events and on one of 100,000 events
 * Beside each append figure, its peer in the same run: pgbench running the very statement our
 * append sent (recorded from a real call, with its bound values; see bench/peers/pgbench.ts) with
 * the same number of clients on the same PostgreSQL — BEGIN, the statement, COMMIT for the
 * appends in a transaction, the statement alone for autocommit — the ceiling of that statement
 * here. The event ids are made by the server there (gen_random_uuid(): pgbench has no uuid), the
 * rest is bound as pg binds it.
 * Usage: npx tsx bench/eventstore.ts [seconds=10]
 */
import { streamIdOf } from '../domain/shared/event';
import { CommandRunner } from '../infra/eventstore/command-runner';
import { EventStore } from '../infra/eventstore/event-store';
import { inTransaction } from '../infra/postgres/db';
import { systemClock, uuidV7Ids } from '../infra/runtime/clock';
import { handleTally } from '../tests/support/tally/commands';
import type { Recorded } from './peers/pgbench';
import { pgbenchStatement, pgbenchVersion, recording, runPgbench } from './peers/pgbench';
import { benchDatabase, load, machine, progress, report, smoke, smokeOr, summarize } from './support';

const seconds = Number(process.argv[2] ?? 10);
const WRITERS = 8;
const meta = { tenantId: 'bench', actorId: 'bench', traceId: null, correlationId: null, causationId: null };
const { db, drop, url } = await benchDatabase();
const store = new EventStore(systemClock, uuidV7Ids);
const event = (i: number) => ({ type: 'tally.counter.incremented', data: { counterId: 'x', by: 1, value: i } });

/**
 * pgbench running the statement of one append of `size` events to a stream at a version (the
 * common path), recorded from a real call, on streams of its own (one per client, created first at
 * version 1): events/s, checked against the rows it wrote.
 */
const pgbench = await pgbenchVersion();
const pgbenchAppends = async (
  size: number,
  inTx: boolean,
  base: number,
  inSmoke = false,
): Promise<number | undefined> => {
  // a smoke run exercises the peer once (the first append figure), to stay as quick as it was
  if (!pgbench || (smoke && !inSmoke)) return undefined;
  const recordedIn: Recorded[] = [];
  const probe = `bench:probe-${base}`;
  const events = (n: number) => Array.from({ length: n }, (_, i) => event(i));
  await store.appendOne(db, { streamId: probe, expectedVersion: 0, events: events(1) }, meta);
  await store.appendOne(recording(db, recordedIn), { streamId: probe, expectedVersion: 1, events: events(size) }, meta);
  if (recordedIn.length !== 1) throw new Error(`an append sent ${recordedIn.length} statements, not one`);
  for (let c = 0; c < WRITERS; c += 1)
    await store.appendOne(db, { streamId: String(base + c), expectedVersion: 0, events: events(1) }, meta);
  // $1 the stream (the client's), $2 its version (advanced by the script), $12 the event ids (fresh)
  const { sql, defines } = pgbenchStatement(recordedIn[0]!, {
    1: ':sid',
    2: ':v',
    12: `(SELECT array_agg(gen_random_uuid()) FROM generate_series(1, ${size}))`,
  });
  const script = [
    `\\set sid :client_id + ${base}`,
    ...(inTx ? ['BEGIN;', sql, 'COMMIT;'] : [sql]),
    '\\set v :v + ' + size,
  ].join('\n');
  const r = await runPgbench({ url, script, clients: WRITERS, seconds, defines: { ...defines, v: '1' } });
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM es.events WHERE stream_id = ANY($1::text[]) AND stream_version > 1',
    [Array.from({ length: WRITERS }, (_, c) => String(base + c))],
  );
  if (rows[0]!.n !== r.transactions * size)
    throw new Error(
      `pgbench: ${r.transactions} transactions but ${rows[0]!.n} events written (expected ${r.transactions * size})`,
    );
  const perSecond = r.tps * size;
  console.log(
    `  peer, pgbench (same statement${inTx ? ' in BEGIN/COMMIT' : ''}, ${WRITERS} clients, prepared): ${Math.round(perSecond)} events/s; latency average ${r.latencyMs.toFixed(2)} ms per ${inTx ? 'transaction' : 'statement'}`,
  );
  return perSecond;
};
const PGBENCH = pgbench
  ? `${pgbench.replace(/^pgbench \(PostgreSQL\) /, 'pgbench ').replace(/ \(.*\)$/, '')}, the same statement, 8 clients`
  : 'pgbench: not on this machine (no peer in this run)';
if (!pgbench) console.log('peer: pgbench is not on this machine (PGBENCH, or postgresql-client): no peer in this run');

console.log(`# event store — ${machine()}, PostgreSQL local`);
try {
  progress('bench', `single-event appends, 8 writers, ${seconds} s`);
  const versions = new Array(8).fill(0);
  const single = await load(8, seconds, async (w) => {
    await inTransaction(db, (tx) =>
      store.append(
        tx,
        [{ streamId: `bench:w${w}`, expectedVersion: versions[w]!, events: [event(versions[w])] }],
        meta,
      ),
    );
    versions[w] += 1;
  });
  const s1 = summarize(single.latencies);
  console.log(
    `single-event appends, 8 concurrent writers: ${Math.round(single.calls / single.seconds)} events/s; p50 ${s1.p50.toFixed(2)} ms, p99 ${s1.p99.toFixed(2)} ms (aim ≥ 5,000/s)`,
  );
  progress('bench', `pgbench, the single-event append in BEGIN/COMMIT, 8 clients, ${seconds} s`);
  const singlePeer = await pgbenchAppends(1, true, 1_000_000, true);
  report({
    path: 'single-event appends in a transaction, 8 writers',
    figure: single.calls / single.seconds,
    unit: 'events/s',
    aim: '≥ 5,000/s',
    peer: PGBENCH,
    peerFigure: singlePeer,
  });

  progress('bench', `single-event appends as one autocommit statement, 8 writers, ${seconds} s`);
  const aversions = new Array(8).fill(0);
  const auto = await load(8, seconds, async (w) => {
    await store.appendOne(
      db,
      { streamId: `bench:a${w}`, expectedVersion: aversions[w]!, events: [event(aversions[w])] },
      meta,
    );
    aversions[w] += 1;
  });
  const s0 = summarize(auto.latencies);
  console.log(
    `single-event appends, 8 concurrent writers, one statement each (no BEGIN/COMMIT): ${Math.round(auto.calls / auto.seconds)} events/s; p50 ${s0.p50.toFixed(2)} ms, p99 ${s0.p99.toFixed(2)} ms`,
  );
  progress('bench', `pgbench, the single-event append alone (autocommit), 8 clients, ${seconds} s`);
  const autoPeer = await pgbenchAppends(1, false, 2_000_000);
  report({
    path: 'single-event autocommit appends, 8 writers',
    figure: auto.calls / auto.seconds,
    unit: 'events/s',
    aim: '',
    peer: autoPeer === undefined && pgbench ? 'pgbench: skipped in a smoke run' : PGBENCH,
    peerFigure: autoPeer,
  });

  progress('bench', `batches of 100, 8 writers, ${seconds} s`);
  const bversions = new Array(8).fill(0);
  const batches = await load(8, seconds, async (w) => {
    await inTransaction(db, (tx) =>
      store.append(
        tx,
        [
          {
            streamId: `bench:b${w}`,
            expectedVersion: bversions[w]!,
            events: Array.from({ length: 100 }, (_, i) => event(i)),
          },
        ],
        meta,
      ),
    );
    bversions[w] += 100;
  });
  const s2 = summarize(batches.latencies);
  console.log(
    `batches of 100 events, 8 concurrent writers: ${Math.round((batches.calls * 100) / batches.seconds)} events/s; per batch p50 ${s2.p50.toFixed(2)} ms, p99 ${s2.p99.toFixed(2)} ms (aim ≥ 30,000 events/s)`,
  );
  progress('bench', `pgbench, the append of 100 events in BEGIN/COMMIT, 8 clients, ${seconds} s`);
  const batchPeer = await pgbenchAppends(100, true, 3_000_000);
  report({
    path: 'batched appends (100 events), 8 writers',
    figure: (batches.calls * 100) / batches.seconds,
    unit: 'events/s',
    aim: '≥ 100,000/s',
    peer: batchPeer === undefined && pgbench ? 'pgbench: skipped in a smoke run' : PGBENCH,
    peerFigure: batchPeer,
  });

  const runner = new CommandRunner(db, store, null);
  const seed = async (id: string, n: number) => {
    await runner.run(meta, (uow) => handleTally(uow, { type: 'CreateCounter', counterId: id, name: id }));
    const streamId = streamIdOf('tally.counter', 'bench', id);
    let version = 1;
    while (version < n) {
      const k = Math.min(1000, n - version);
      await inTransaction(db, (tx) =>
        store.append(
          tx,
          [
            {
              streamId,
              expectedVersion: version,
              events: Array.from({ length: k }, (_, i) => ({
                type: 'tally.counter.incremented',
                data: { counterId: id, by: 1, value: version + i },
              })),
              state: { value: { status: 'open', name: id, value: version + k - 1 }, schema: 'counter.v1' },
            },
          ],
          meta,
        ),
      );
      version += k;
      if (version % 20_000 < 1000) progress('seed', `${id}: ${version}/${n}`);
    }
  };
  await seed('short', 10);
  const longStream = smokeOr(100_000, 1_000);
  await seed('long', longStream);
  const command = async (id: string) => {
    const latencies: number[] = [];
    for (let i = 0; i < smokeOr(1000, 20); i += 1) {
      const t = performance.now();
      await runner.run(meta, (uow) => handleTally(uow, { type: 'Increment', counterId: id, by: 1 }));
      latencies.push(performance.now() - t);
    }
    return summarize(latencies);
  };
  await command('short'); // warm-up
  const short = await command('short');
  const long = await command('long');
  const diff = ((long.p50 - short.p50) / short.p50) * 100;
  console.log(
    `command latency (1,000 increments each): stream of 10 events p50 ${short.p50.toFixed(3)} ms p99 ${short.p99.toFixed(3)} ms; stream of ${longStream.toLocaleString('en')} events p50 ${long.p50.toFixed(3)} ms p99 ${long.p99.toFixed(3)} ms; difference at p50 ${diff.toFixed(1)} % (aim within 20 %)`,
  );
  report({
    path: `command latency p50, stream of ${longStream.toLocaleString('en')} events vs of 10`,
    figure: long.p50,
    unit: 'ms',
    aim: 'within 20 % of the peer',
    peer: 'stream of 10 events',
    peerFigure: short.p50,
  });
} finally {
  await drop();
}
