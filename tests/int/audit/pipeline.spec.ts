import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestAuditRecords } from '../../../commands/audit/ingest';
import { purgeFallback } from '../../../commands/audit/retention';
import { verifyChains } from '../../../commands/audit/verify';
import { AUDIT_TOPIC, AuditRecorder, auditRecord } from '../../../infra/audit';
import { relayAuditOutbox } from '../../../workers/audit-relay';
import { openEmbeddedClickHouse } from '../../../infra/clickhouse/embedded';
import { migrateAnalytics } from '../../../infra/clickhouse/migrate';
import type { AnalyticsStore } from '../../../infra/clickhouse/port';
import type { LogPort, LogConsumer } from '../../../infra/log/port';
import { PgLog } from '../../../infra/log/pg-log';
import { silentLogger } from '../../../infra/observability/logger';
import { createPool, type Db } from '../../../infra/postgres/db';
import { uuidV7Ids } from '../../../infra/runtime/clock';
import { eventually } from '../../support/audit';
import type { TestDatabase } from '../../support/db';
import { createTestDatabase } from '../../support/db';
import { requireEnv } from '../../support/env';
import type { TcpProxy } from '../../support/tcp-proxy';
import { startTcpProxy } from '../../support/tcp-proxy';

/**
 * The audit write pipeline with the kernel in process (issue 11): real PostgreSQL (fallback table,
 * the PostgreSQL log, chain heads), real chdb, and Kafka for a group that rebalances. The log
 * "stops" by cutting a TCP proxy in front of its server, never by stopping a shared server.
 */
let database: TestDatabase;
let ch: AnalyticsStore;
const logger = silentLogger();

beforeAll(async () => {
  database = await createTestDatabase('aud');
  ch = await openEmbeddedClickHouse({
    dataDir: join(tmpdir(), `platform-test-${process.pid}`),
    database: new URL(database.url).pathname.slice(1),
  });
  await migrateAnalytics(ch, database.db);
});
afterAll(async () => {
  await ch?.close();
  await database?.drop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const counts = async (tenantId: string) => {
  const [row] = await ch.query<{ n: string; ids: string }>(
    `SELECT count() AS n, uniqExact(id) AS ids FROM ${ch.database}.audit_records WHERE tenant_id = {t:String}`,
    { t: tenantId },
  );
  return { rows: Number(row!.n), ids: Number(row!.ids) };
};

const aRecord = (tenantId: string, i: number) =>
  auditRecord(
    {
      action: 'test.item.recorded',
      entityType: 'item',
      entityId: `item-${i % 97}`,
      tenantId,
      actorId: 'tester',
      after: { i },
      timestamp: new Date().toISOString(),
    },
    uuidV7Ids.next(),
  );

/** the audit consumer's step, in a subscription of the test's own */
const consume = (
  log: LogPort,
  o: { groupId: string; topic?: string; maxBatch?: number; before?: () => unknown; afterStore?: () => void },
): Promise<LogConsumer> =>
  log.subscribe({
    groupId: o.groupId,
    topics: [o.topic ?? AUDIT_TOPIC],
    maxBatch: o.maxBatch ?? 500,
    eachBatch: async (records) => {
      await o.before?.();
      await ingestAuditRecords(
        database.db,
        ch,
        records.map((r) => r.value),
        new Date(),
      );
      o.afterStore?.();
    },
  });

describe('the log unreachable in the middle of a stream of 10,000 records', () => {
  let proxy: TcpProxy;
  let logDb: Db;

  beforeAll(async () => {
    const server = new URL(requireEnv('TEST_DATABASE_URL'));
    proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port) });
    const viaProxy = new URL(database.url);
    viaProxy.port = String(proxy.port);
    logDb = createPool(viaProxy.toString(), { max: 4, waitMs: 1000 });
  });
  afterAll(async () => {
    await logDb?.end().catch(() => undefined);
    await proxy?.close();
  });

  it('stores every record once after the fallback replay', async () => {
    const tenantId = `pipe-${randomUUID()}`;
    const reachable = new PgLog(database.db, { logger });
    const recordingLog = new PgLog(logDb, { logger });
    await reachable.ensureTopics([{ name: AUDIT_TOPIC, partitions: 3, retentionMs: 720 * 3600_000 }]);
    const kernel = { db: database.db, log: recordingLog, logger, ids: uuidV7Ids };
    const recorder = new AuditRecorder(kernel, {
      publishTimeoutMs: 1000,
      logDownMs: 300,
      batchSize: 200,
    });
    const consumer = await consume(reachable, { groupId: `audit.store.${randomUUID()}`, maxBatch: 2000 });
    try {
      const acknowledged: Promise<void>[] = [];
      for (let i = 0; i < 10_000; i += 1) {
        if (i === 5000) await proxy.cut();
        acknowledged.push(recorder.record(aRecord(tenantId, i)));
        // pace the producer a little, so the stream keeps flowing while it is consumed
        if (i % 250 === 0) await sleep(5);
      }
      await Promise.all(acknowledged); // every record durable: on the log, or in the outbox
      const parked = Number((await database.db.query('SELECT count(*) AS n FROM audit.outbox')).rows[0].n);
      expect(parked).toBeGreaterThan(0);
      expect((await counts(tenantId)).ids).toBeLessThan(10_000);

      await proxy.restore();
      await eventually(
        async () => {
          await relayAuditOutbox(kernel, 500, 2000).catch(() => 0);
          return Number((await database.db.query('SELECT count(*) AS n FROM audit.outbox')).rows[0].n) === 0;
        },
        60_000,
        100,
      );
      await eventually(async () => (await counts(tenantId)).ids === 10_000, 60_000, 200);
      await sleep(500); // anything still in flight would land twice now
      expect(await counts(tenantId)).toEqual({ rows: 10_000, ids: 10_000 });
      expect((await verifyChains(ch, { tenantId })).breaks).toEqual([]);
    } finally {
      await recorder.close();
      await consumer.stop();
      await recordingLog.close().catch(() => undefined);
      await reachable.close();
    }
  });
});

describe('the consumer killed and restarted mid-batch', () => {
  it('stores none twice: a batch stored but not committed comes again and is recognized', async () => {
    const tenantId = `crash-${randomUUID()}`;
    const log = new PgLog(database.db, { logger });
    const topic = `audit-crash-${randomUUID()}`;
    await log.ensureTopics([{ name: topic, partitions: 3, retentionMs: 3600_000 }]);
    await log.publish(
      topic,
      Array.from({ length: 3000 }, (_, i) => aRecord(tenantId, i)),
    );
    const groupId = `audit.store.${randomUUID()}`;
    let batches = 0;
    // killed after storing its second batch, before the offsets are committed; restarted by the log's retry
    const first = await consume(log, {
      groupId,
      topic,
      maxBatch: 400,
      afterStore: () => {
        batches += 1;
        if (batches === 2) throw new Error('killed before the commit');
      },
    });
    await eventually(async () => batches >= 4, 30_000);
    await first.stop(); // stopped mid-stream, then a new process takes over the group
    const second = await consume(log, { groupId, topic, maxBatch: 400 });
    try {
      await eventually(async () => (await counts(tenantId)).ids === 3000, 30_000, 100);
      // deliberately let time pass: anything still in flight would land twice now (an absence)
      await sleep(300);
      expect(await counts(tenantId)).toEqual({ rows: 3000, ids: 3000 });
      expect((await verifyChains(ch, { tenantId })).breaks).toEqual([]);
    } finally {
      await second.stop();
      await log.close();
    }
  });

  it('continues the chain after an insert whose head update was lost', async () => {
    const tenantId = `head-${randomUUID()}`;
    const first = Array.from({ length: 50 }, (_, i) => aRecord(tenantId, i).value);
    await ingestAuditRecords(database.db, ch, first, new Date());
    // the process died between the ClickHouse insert and the head update
    await database.db.query('UPDATE audit.chain_heads SET seq = 10, hash = $2 WHERE tenant_id = $1', [
      tenantId,
      'f'.repeat(64),
    ]);
    const again = await ingestAuditRecords(
      database.db,
      ch,
      [...first.slice(40), ...Array.from({ length: 20 }, (_, i) => aRecord(tenantId, 100 + i).value)],
      new Date(),
    );
    expect(again).toMatchObject({ stored: 20, duplicates: 10 });
    expect(await counts(tenantId)).toEqual({ rows: 70, ids: 70 });
    const report = await verifyChains(ch, { tenantId });
    expect(report).toMatchObject({ checked: 70, breaks: [] });
  });
});

describe('consumers of one group on Kafka, rebalancing and restarting', () => {
  it('store every record once', async () => {
    const { KafkaLog } = await import('../../../infra/log/kafka-log');
    const open = () =>
      new KafkaLog({
        brokers: requireEnv('TEST_KAFKA_BROKERS').split(','),
        clientId: `audit-test-${process.pid}`,
        logger,
      });
    const admin = open();
    const topic = `audit-rebalance-${randomUUID()}`;
    const tenants = [`k1-${randomUUID()}`, `k2-${randomUUID()}`];
    await admin.ensureTopics([{ name: topic, partitions: 3, retentionMs: 3600_000 }]);
    await admin.publish(
      topic,
      Array.from({ length: 3000 }, (_, i) => aRecord(tenants[i % 2]!, i)),
    );
    const groupId = `audit.store.${randomUUID()}`;
    const logs = [open(), open(), open()];
    const total = async () => (await counts(tenants[0]!)).ids + (await counts(tenants[1]!)).ids;
    const slow = () => sleep(50); // keeps the stream going while the group changes
    const one = await consume(logs[0]!, { groupId, topic, maxBatch: 100, before: slow });
    const two = await consume(logs[1]!, { groupId, topic, maxBatch: 100, before: slow });
    let three: LogConsumer | null = null;
    try {
      await eventually(async () => (await total()) >= 300, 60_000, 100);
      await one.stop(); // a restart: its partitions move to the others
      three = await consume(logs[2]!, { groupId, topic, maxBatch: 100 });
      await eventually(async () => (await total()) === 3000, 90_000, 200);
      // deliberately let time pass: anything still in flight would land twice now (an absence)
      await sleep(500);
      for (const t of tenants) expect(await counts(t)).toEqual({ rows: 1500, ids: 1500 });
      for (const t of tenants) expect((await verifyChains(ch, { tenantId: t })).breaks).toEqual([]);
    } finally {
      await two.stop();
      await three?.stop();
      for (const l of [...logs, admin]) await l.close().catch(() => undefined);
    }
  });
});

describe('the verifier', () => {
  const seed = async (tenantId: string, n: number) => {
    await ingestAuditRecords(
      database.db,
      ch,
      Array.from({ length: n }, (_, i) => aRecord(tenantId, i).value),
      new Date(),
    );
    return ch.query<{ id: string; seq: string }>(
      `SELECT id, seq FROM ${ch.database}.audit_records WHERE tenant_id = {t:String} ORDER BY seq`,
      { t: tenantId },
    );
  };

  it('finds a record altered in storage', async () => {
    const tenantId = `tamper-${randomUUID()}`;
    const rows = await seed(tenantId, 40);
    expect((await verifyChains(ch, { tenantId })).breaks).toEqual([]);
    const victim = rows[17]!;
    await ch.command(
      `ALTER TABLE ${ch.database}.audit_records UPDATE after = '{"i":999999}' WHERE tenant_id = '${tenantId}' AND id = '${victim.id}' SETTINGS mutations_sync = 2`,
    );
    const progress: number[] = [];
    const report = await verifyChains(ch, { tenantId, onProgress: (done) => progress.push(done) });
    expect(report.breaks).toEqual([{ chain: 'log', tenantId, seq: victim.seq, id: victim.id, reason: 'altered' }]);
    expect(progress.length).toBeGreaterThan(0);
  });

  it('finds a record removed from storage', async () => {
    const tenantId = `gap-${randomUUID()}`;
    const rows = await seed(tenantId, 30);
    await ch.command(
      `ALTER TABLE ${ch.database}.audit_records DELETE WHERE tenant_id = '${tenantId}' AND id = '${rows[9]!.id}' SETTINGS mutations_sync = 2`,
    );
    const report = await verifyChains(ch, { tenantId });
    expect(report.breaks).toEqual([{ chain: 'log', tenantId, seq: rows[10]!.seq, id: rows[10]!.id, reason: 'gap' }]);
  });
});

describe('the fallback table', () => {
  it('keeps records 7 days: older ones are dropped, younger ones stay for the replay', async () => {
    const id = () => randomUUID();
    const [young, old] = [id(), id()];
    await database.db.query(
      `INSERT INTO audit.outbox (event_id, record, created_at) VALUES ($1, '{}', now() - interval '6 days 23 hours'), ($2, '{}', now() - interval '7 days 1 hour')`,
      [young, old],
    );
    expect(await purgeFallback({ db: database.db, logger })).toBe(1);
    const { rows } = await database.db.query('SELECT event_id FROM audit.outbox WHERE event_id = ANY($1::uuid[])', [
      [young, old],
    ]);
    expect(rows.map((r) => r.event_id)).toEqual([young]);
    await database.db.query('DELETE FROM audit.outbox WHERE event_id = $1', [young]);
  });
});
