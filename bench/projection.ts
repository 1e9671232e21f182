/**
 * Projection catch-up of issue 2: events/s an async projection applies into PostgreSQL while
 * rebuilding from the beginning of the log (the sample counters projection: one upsert per event).
 * Usage: npx tsx bench/projection.ts [events=100000]
 */
import { EventStore } from '../infra/eventstore/event-store';
import { inTransaction } from '../infra/postgres/db';
import { ProjectionEngine } from '../infra/projections/engine';
import { systemClock, uuidV7Ids } from '../infra/runtime/clock';
import { counters, totals } from '../tests/support/tally/projections';
import { benchDatabase, machine, progress, report } from './support';

const total = Number(process.argv[2] ?? 100_000);
const { db, drop } = await benchDatabase();
const store = new EventStore(systemClock, uuidV7Ids);
const meta = { tenantId: 'bench', actorId: null, traceId: null, correlationId: null, causationId: null };

console.log(`# projection catch-up — ${machine()}, PostgreSQL local`);
try {
  const streams = 1000;
  const per = total / streams;
  progress('bench', `writing ${total} events over ${streams} counters`);
  for (let s = 0; s < streams; s += 10) {
    await inTransaction(db, (tx) =>
      store.append(
        tx,
        Array.from({ length: 10 }, (_, k) => ({
          streamId: `tally.counter:bench:c${s + k}`,
          expectedVersion: 0,
          events: [
            { type: 'tally.counter.created', data: { counterId: `c${s + k}`, name: 'c' } },
            ...Array.from({ length: per - 1 }, (_, i) => ({
              type: 'tally.counter.incremented',
              data: { counterId: `c${s + k}`, by: 1, value: i + 1 },
            })),
          ],
        })),
        meta,
      ),
    );
  }
  for (const projection of [counters, totals]) {
    const engine = new ProjectionEngine(db, store, [projection]);
    await engine.prepare();
    const t0 = performance.now();
    let last = 0;
    await engine.rebuild(projection.name, (p) => {
      if (p.applied - last >= 20_000) {
        last = p.applied;
        progress(projection.name, `${p.applied}/${p.total}`);
      }
    });
    const seconds = (performance.now() - t0) / 1000;
    console.log(
      `${projection.name} (${projection.mode}) rebuild of ${total} events: ${Math.round(total / seconds)} events/s (aim ≥ 20,000/s)`,
    );
    report({
      path: `projection catch-up, ${projection.name} (${projection.mode})`,
      figure: total / seconds,
      unit: 'events/s',
      aim: '≥ 30,000/s',
    });
  }
} finally {
  await drop();
}
