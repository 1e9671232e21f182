/**
 * Event store figures of issue 2:
 *  - single-event appends/s with 8 concurrent writers, p50/p99
 *  - batches of 100 events: events/s, p50/p99 per batch
 *  - command latency (load + decide + append through the CommandRunner) on a stream of 10
 *    events and on one of 100,000 events
 * Usage: npx tsx bench/eventstore.ts [seconds=10]
 */
import { streamIdOf } from '../domain/shared/event';
import { CommandRunner } from '../infra/eventstore/command-runner';
import { EventStore } from '../infra/eventstore/event-store';
import { inTransaction } from '../infra/postgres/db';
import { systemClock, uuidV7Ids } from '../infra/runtime/clock';
import { handleTally } from '../tests/support/tally/commands';
import { benchDatabase, load, machine, progress, report, smokeOr, summarize } from './support';

const seconds = Number(process.argv[2] ?? 10);
const meta = { tenantId: 'bench', actorId: 'bench', traceId: null, correlationId: null, causationId: null };
const { db, drop } = await benchDatabase();
const store = new EventStore(systemClock, uuidV7Ids);
const event = (i: number) => ({ type: 'tally.counter.incremented', data: { counterId: 'x', by: 1, value: i } });

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
  report({
    path: 'single-event appends in a transaction, 8 writers',
    figure: single.calls / single.seconds,
    unit: 'events/s',
    aim: '≥ 5,000/s',
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
  report({
    path: 'single-event autocommit appends, 8 writers',
    figure: auto.calls / auto.seconds,
    unit: 'events/s',
    aim: '',
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
  report({
    path: 'batched appends (100 events), 8 writers',
    figure: (batches.calls * 100) / batches.seconds,
    unit: 'events/s',
    aim: '≥ 100,000/s',
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
