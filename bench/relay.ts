/**
 * Outbox relay figures of issue 2, against the test Kafka (TEST_KAFKA_BROKERS):
 *  - relay throughput: events/s from the event store to Kafka, draining a backlog
 *  - commit-to-consumer lag p50/p99 while writers commit 1,000 events/s
 * Usage: npx tsx bench/relay.ts [backlog=100000] [seconds=20]
 */
import { randomBytes } from 'node:crypto';
import { EventStore } from '../infra/eventstore/event-store';
import { KafkaLog } from '../infra/log/kafka-log';
import { silentLogger } from '../infra/observability/logger';
import { inTransaction } from '../infra/postgres/db';
import { systemClock, uuidV7Ids } from '../infra/runtime/clock';
import { OutboxRelay } from '../workers/outbox-relay';
import { waitForVisibleLog } from '../tests/support/db';
import { benchDatabase, machine, progress, report, smokeOr, summarize } from './support';

const backlog = Number(process.argv[2] ?? 100_000);
const seconds = Number(process.argv[3] ?? 20);
const brokers = process.env.TEST_KAFKA_BROKERS ?? process.env.KAFKA_BROKERS;
if (!brokers) throw new Error('run scripts/test-infra.sh first (TEST_KAFKA_BROKERS)');
const { db, drop } = await benchDatabase();
const store = new EventStore(systemClock, uuidV7Ids);
const log = new KafkaLog({ brokers: brokers.split(','), clientId: 'bench', logger: silentLogger() });
const tenant = `bench-${randomBytes(3).toString('hex')}`;
const meta = { tenantId: tenant, actorId: null, traceId: null, correlationId: null, causationId: null };
const topic = 'platform.benchrelay.events';
await log.ensureTopics([{ name: topic, partitions: 3, retentionMs: 3600_000 }]);

console.log(`# outbox relay → Kafka — ${machine()}, PostgreSQL and Kafka 3.9 local`);
try {
  progress('bench', `writing a backlog of ${backlog} events`);
  for (let i = 0; i < backlog; i += 1000) {
    await inTransaction(db, (tx) =>
      store.append(
        tx,
        Array.from({ length: 10 }, (_, k) => ({
          streamId: `benchrelay.e:${tenant}:${i + k}`,
          expectedVersion: 0,
          events: Array.from({ length: 100 }, (_, j) => ({
            type: 'benchrelay.entity.changed',
            data: { i, k, j, pad: 'x'.repeat(100) },
          })),
        })),
        meta,
      ),
    );
  }
  // the relay reads only below the oldest transaction running on the server (mechanism 1): on a
  // server shared with other work it could otherwise drain nothing and report 0 events/s
  await waitForVisibleLog(db);
  const relay = new OutboxRelay(db, store, log, silentLogger(), { name: 'bench-relay', batchSize: 5000 });
  const t0 = performance.now();
  let sent = 0;
  for (;;) {
    const n = await relay.runOnce();
    if (n === 0) break;
    sent += n;
    if (sent % 20_000 < 5000) progress('relay', `${sent}/${backlog}`);
  }
  const throughput = sent / ((performance.now() - t0) / 1000);
  console.log(`relay throughput draining ${sent} events: ${Math.round(throughput)} events/s (aim ≥ 10,000/s)`);
  report({ path: 'relay → Kafka, draining a backlog', figure: throughput, unit: 'events/s', aim: '≥ 50,000/s' });

  progress('bench', `lag at 1,000 events/s for ${seconds} s`);
  const lags: number[] = [];
  const sub = await log.subscribe({
    groupId: `bench-${randomBytes(3).toString('hex')}`,
    topics: [topic],
    start: 'latest',
    eachBatch: async (records) => {
      const now = Date.now();
      for (const r of records) lags.push(now - Number(JSON.parse(r.value).payload.committedAt));
    },
  });
  await new Promise((r) => setTimeout(r, smokeOr(2000, 500)));
  relay.start();
  const until = Date.now() + seconds * 1000;
  let n = 0;
  while (Date.now() < until) {
    const tick = Date.now();
    // 10 events every 10 ms = 1,000/s; committedAt is stamped just before commit
    await inTransaction(db, (tx) =>
      store.append(
        tx,
        [
          {
            streamId: `benchrelay.e:${tenant}:lag${n}`,
            expectedVersion: 0,
            events: Array.from({ length: 10 }, () => ({
              type: 'benchrelay.entity.changed',
              data: { committedAt: Date.now() },
            })),
          },
        ],
        meta,
      ),
    );
    n += 1;
    await new Promise((r) => setTimeout(r, Math.max(0, 10 - (Date.now() - tick))));
  }
  await new Promise((r) => setTimeout(r, smokeOr(2000, 500)));
  await relay.stop();
  await sub.stop();
  const s = summarize(lags);
  console.log(
    `commit-to-consumer lag at ${Math.round((n * 10) / seconds)} events/s: p50 ${s.p50} ms, p99 ${s.p99} ms over ${s.n} events (aim p99 < 200 ms)`,
  );
  report({ path: 'commit-to-consumer lag at 1,000 events/s, p99', figure: s.p99, unit: 'ms', aim: '< 200 ms' });
} finally {
  await log.close();
  await drop();
}
