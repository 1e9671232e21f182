import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { entityIdOf } from '../../domain/shared/event';
import { storedEventOf } from '../../infra/events/envelope';
import { CommandRunner } from '../../infra/eventstore/command-runner';
import { EventStore } from '../../infra/eventstore/event-store';
import { KafkaLog } from '../../infra/log/kafka-log';
import type { LogRecord, LogConsumer } from '../../infra/log/port';
import { silentLogger } from '../../infra/observability/logger';
import { systemClock, uuidV7Ids } from '../../infra/runtime/clock';
import { OutboxRelay } from '../../workers/outbox-relay';
import type { TestDatabase } from '../support/db';
import { createTestDatabase, waitForVisibleLog } from '../support/db';
import { requireEnv } from '../support/env';
import { handleTally } from '../support/tally/commands';

const TOPIC = 'platform.tally.events';
let t: TestDatabase;
let log: KafkaLog;
const store = new EventStore(systemClock, uuidV7Ids);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const kafkaCtl = (action: 'stop' | 'start') =>
  execFileSync('bash', [requireEnv('TEST_INFRA_CTL'), 'kafka', action], { stdio: 'ignore', timeout: 120_000 });

beforeAll(async () => {
  t = await createTestDatabase('relay');
  log = new KafkaLog({
    brokers: requireEnv('TEST_KAFKA_BROKERS').split(','),
    clientId: 'relay-test',
    logger: silentLogger(),
  });
  await log.ensureTopics([{ name: TOPIC, partitions: 3, retentionMs: 3600_000 }]);
});
afterAll(async () => {
  await log.close();
  await t.drop();
});

/** a consumer that keeps what it receives for one tenant; dedupes by eventId like every platform consumer */
const consume = async (tenant: string) => {
  const received: { eventId: string; key: string; partition: number; streamVersion: number; entityId: string }[] = [];
  const sub: LogConsumer = await log.subscribe({
    groupId: `relay-test-${randomBytes(4).toString('hex')}`,
    topics: [TOPIC],
    start: 'earliest',
    eachBatch: async (records: LogRecord[]) => {
      for (const r of records) {
        const e = storedEventOf(r);
        if (e?.tenantId === tenant)
          received.push({
            eventId: e.eventId,
            key: r.key,
            partition: r.partition,
            streamVersion: e.streamVersion,
            entityId: entityIdOf(e.streamId),
          });
      }
    },
  });
  const unique = () => new Set(received.map((r) => r.eventId));
  return { received, unique, stop: () => sub.stop() };
};

const writeIncrements = async (tenant: string, counters: number, perCounter: number) => {
  const runner = new CommandRunner(t.db, store, null);
  const meta = { tenantId: tenant, actorId: 'u', traceId: null, correlationId: null, causationId: null };
  for (let c = 0; c < counters; c += 1)
    await runner.run(meta, (uow) => handleTally(uow, { type: 'CreateCounter', counterId: `k${c}`, name: 'k' }));
  for (let i = 0; i < perCounter; i += 1) {
    await Promise.all(
      Array.from({ length: counters }, (_, c) =>
        runner.run(meta, (uow) => handleTally(uow, { type: 'Increment', counterId: `k${c}`, by: 1 })),
      ),
    );
  }
  return counters * (perCounter + 1);
};

const waitUntil = async (cond: () => boolean, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs;
  while (!cond() && Date.now() < deadline) await sleep(100);
};

describe('the outbox relay with Kafka up', () => {
  it('publishes every committed event with key = entityId, in per-key order', async () => {
    const tenant = `t-${randomBytes(4).toString('hex')}`;
    const total = await writeIncrements(tenant, 8, 25);
    const relay = new OutboxRelay(t.db, store, log, silentLogger(), { name: `relay-${tenant}` });
    relay.start();
    const consumer = await consume(tenant);
    await waitUntil(() => consumer.unique().size >= total, 60_000);
    await relay.stop();
    await consumer.stop();
    expect(consumer.unique().size).toBe(total);
    for (const r of consumer.received) expect(r.key).toBe(r.entityId);
    const byKey = new Map<string, number[]>();
    for (const r of consumer.received) byKey.set(r.key, [...(byKey.get(r.key) ?? []), r.streamVersion]);
    expect(byKey.size).toBe(8);
    for (const versions of byKey.values()) expect(versions).toEqual([...versions].sort((a, b) => a - b));
    for (const key of byKey.keys())
      expect(new Set(consumer.received.filter((r) => r.key === key).map((r) => r.partition)).size).toBe(1);
  });
});

describe('the outbox relay when the broker stops in the middle', () => {
  it('loses nothing: after the broker returns, a deduplicating consumer sees each event exactly once', async () => {
    const tenant = `t-${randomBytes(4).toString('hex')}`;
    const relay = new OutboxRelay(t.db, store, log, silentLogger(), { name: `relay-${tenant}` });
    relay.start();
    const firstHalf = writeIncrements(tenant, 4, 30);
    // deliberately let the first half of the writes start before Kafka stops
    await sleep(300);
    kafkaCtl('stop');
    const written = await firstHalf;
    // events keep committing while the broker is away
    const moreMeta = { tenantId: tenant, actorId: 'u', traceId: null, correlationId: null, causationId: null };
    const runner = new CommandRunner(t.db, store, null);
    for (let i = 0; i < 20; i += 1)
      await runner.run(moreMeta, (uow) => handleTally(uow, { type: 'Increment', counterId: 'k0', by: 1 }));
    expect(await relay.lag()).toBeGreaterThan(0);
    kafkaCtl('start');
    const consumer = await consume(tenant);
    await waitUntil(() => consumer.unique().size >= written + 20, 90_000);
    await relay.stop();
    await consumer.stop();
    expect(consumer.unique().size).toBe(written + 20);
    expect(await relay.lag()).toBe(0);
  }, 240_000);
});

describe('a relay that dies between publishing and saving its checkpoint', () => {
  it('is resumed by the next one from the checkpoint; duplicates only, no loss', async () => {
    const tenant = `t-${randomBytes(4).toString('hex')}`;
    const total = await writeIncrements(tenant, 3, 20);
    const name = `relay-${tenant}`;
    const first = new OutboxRelay(t.db, store, log, silentLogger(), { name, batchSize: 10 });
    await first.runOnce();
    await first.runOnce();
    // simulate the crash: a batch published but its checkpoint not written
    const dying = Object.assign(Object.create(log) as KafkaLog, {
      publish: async (topic: string, records: Parameters<KafkaLog['publish']>[1]) => {
        await log.publish(topic, records);
        throw new Error('killed');
      },
    });
    const crashing = new OutboxRelay(t.db, store, dying, silentLogger(), { name, batchSize: 10 });
    await expect(crashing.runOnce()).rejects.toThrow('killed');
    const second = new OutboxRelay(t.db, store, log, silentLogger(), { name, batchSize: 10 });
    await waitForVisibleLog(t.db);
    while ((await second.runOnce()) > 0) {
      /* drain */
    }
    const consumer = await consume(tenant);
    await waitUntil(() => consumer.unique().size >= total, 60_000);
    await consumer.stop();
    expect(consumer.unique().size).toBe(total);
    expect(consumer.received.length).toBeGreaterThanOrEqual(total);
    expect(consumer.received.length - total).toBeLessThanOrEqual(10);
  });
});
