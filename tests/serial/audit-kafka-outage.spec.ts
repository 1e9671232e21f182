import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestAuditRecords } from '../../commands/audit/ingest';
import { verifyChains } from '../../commands/audit/verify';
import { AUDIT_TOPIC, AuditRecorder, auditRecord, relayAuditOutbox } from '../../infra/audit';
import { openEmbeddedClickHouse } from '../../infra/clickhouse/embedded';
import { migrateAnalytics } from '../../infra/clickhouse/migrate';
import type { AnalyticsStore } from '../../infra/clickhouse/port';
import { KafkaLog } from '../../infra/log/kafka-log';
import { silentLogger } from '../../infra/observability/logger';
import { uuidV7Ids } from '../../infra/runtime/clock';
import type { TestDatabase } from '../support/db';
import { createTestDatabase } from '../support/db';
import { requireEnv } from '../support/env';

/**
 * The audit pipeline on Kafka with Kafka itself stopped in the middle of a stream of 10,000
 * records (the int suite cuts the PostgreSQL log behind a TCP proxy instead; Kafka's advertised
 * listener bypasses a proxy). Stops the shared Kafka: serial project only.
 */
const logger = silentLogger();
const kafkaCtl = (action: 'stop' | 'start') =>
  execFileSync('bash', [requireEnv('TEST_INFRA_CTL'), 'kafka', action], { stdio: 'ignore', timeout: 120_000 });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let database: TestDatabase;
let ch: AnalyticsStore;
let kafkaStopped = false;

beforeAll(async () => {
  database = await createTestDatabase('audk');
  ch = await openEmbeddedClickHouse({
    dataDir: join(tmpdir(), `platform-test-${process.pid}`),
    database: new URL(database.url).pathname.slice(1),
  });
  await migrateAnalytics(ch, database.db);
});
afterAll(async () => {
  if (kafkaStopped) kafkaCtl('start'); // never leave the shared Kafka down, whatever failed
  await ch?.close();
  await database?.drop();
});

describe('Kafka stopped in the middle of a stream of 10,000 audit records', () => {
  it('loses none and stores none twice once Kafka is back and the fallback is replayed', async () => {
    const tenantId = `kafka-outage-${randomUUID()}`;
    const log = new KafkaLog({
      brokers: requireEnv('TEST_KAFKA_BROKERS').split(','),
      clientId: 'audit-outage-test',
      logger,
    });
    await log.ensureTopics([{ name: AUDIT_TOPIC, partitions: 3, retentionMs: 720 * 3600_000 }]);
    const kernel = { db: database.db, log, logger, ids: uuidV7Ids };
    const recorder = new AuditRecorder(kernel, {
      publishTimeoutMs: 2000,
      logDownMs: 1000,
      batchSize: 200,
    });
    const stored = async () =>
      Number(
        (
          await ch.query<{ n: string }>(
            `SELECT uniqExact(id) AS n FROM ${ch.database}.audit_records WHERE tenant_id = {t:String}`,
            { t: tenantId },
          )
        )[0]!.n,
      );
    const consumer = await log.subscribe({
      groupId: `audit.store.${randomUUID()}`,
      topics: [AUDIT_TOPIC],
      maxBatch: 2000,
      eachBatch: async (records) => {
        await ingestAuditRecords(
          database.db,
          ch,
          records.map((r) => r.value),
          new Date(),
        );
      },
    });
    try {
      const acknowledged: Promise<void>[] = [];
      for (let i = 0; i < 10_000; i += 1) {
        if (i === 5000) {
          kafkaStopped = true;
          kafkaCtl('stop');
        }
        acknowledged.push(
          recorder.record(
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
            ),
          ),
        );
        // pace the producer a little, so the outage falls mid-stream
        if (i % 250 === 0) await sleep(5);
      }
      await Promise.all(acknowledged); // every record durable: on the log, or in the outbox
      expect(Number((await database.db.query('SELECT count(*) AS n FROM audit.outbox')).rows[0].n)).toBeGreaterThan(0);
      kafkaCtl('start');
      kafkaStopped = false;
      for (let deadline = Date.now() + 180_000; ;) {
        await relayAuditOutbox(kernel, 500, 5000).catch(() => 0);
        const left = Number((await database.db.query('SELECT count(*) AS n FROM audit.outbox')).rows[0].n);
        if (left === 0 && (await stored()) === 10_000) break;
        if (Date.now() > deadline)
          throw new Error(`after the outage: ${left} records still parked, ${await stored()} stored`);
        await sleep(500);
      }
      // deliberately let time pass: no record may land twice after the outage (an absence)
      await sleep(2000);
      const [row] = await ch.query<{ n: string; ids: string }>(
        `SELECT count() AS n, uniqExact(id) AS ids FROM ${ch.database}.audit_records WHERE tenant_id = {t:String}`,
        { t: tenantId },
      );
      expect(row).toEqual({ n: '10000', ids: '10000' });
      expect((await verifyChains(ch, { tenantId })).breaks).toEqual([]);
    } finally {
      await recorder.close();
      await consumer.stop();
      await log.close();
    }
  });
});
