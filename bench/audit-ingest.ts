/**
 * Ingest through the audit pipeline into ClickHouse (chdb): records published onto
 * platform.audit.events (the PostgreSQL log, or Kafka with BENCH_KAFKA=1), consumed in batches by
 * the audit consumer's step (dedup, hash chain, one insert per batch) into chdb. Aim: ≥ 50,000
 * records/s. Prints the publish rate, the consume-and-store rate and the end-to-end rate.
 * Peer in the same run: a raw INSERT of the same rows — read back from the audit table once ingest
 * is done, into a table made like it — in batches of the same size, through the same chdb
 * connection and format the pipeline uses (the AnalyticsStore's insert); nothing else: no
 * decoding, deduplication, chaining or PostgreSQL. Aim: ours ≥ 50 % of it.
 * Usage: source .test-infra/env; npx tsx bench/audit-ingest.ts [records=200000] [tenants=10] [batch=5000]
 */
import { randomUUID } from 'node:crypto';
import { ingestAuditRecords } from '../commands/audit/ingest';
import { auditRecord } from '../infra/audit';
import type { LogPort } from '../infra/log/port';
import { uuidV7Ids } from '../infra/runtime/clock';
import { startAuditBench } from './audit-support';
import { machine, progress, report } from './support';

const total = Number(process.argv[2] ?? 200_000);
const tenants = Number(process.argv[3] ?? 10);
const batch = Number(process.argv[4] ?? 5000);
const { platform, ch } = await startAuditBench(
  process.env.BENCH_KAFKA ? { KAFKA_BROKERS: process.env.TEST_KAFKA_BROKERS ?? '' } : {},
);
try {
  const log: LogPort = platform.kernel.log;
  const topic = `bench-audit-${randomUUID()}`;
  await log.ensureTopics([{ name: topic, partitions: 3, retentionMs: 3600_000 }]);
  const t0 = performance.now();
  for (let from = 0; from < total; from += 10_000) {
    const records = Array.from({ length: Math.min(10_000, total - from) }, (_, i) =>
      auditRecord(
        {
          action: 'invoice.payment.captured',
          entityType: 'invoice',
          entityId: `inv-${(from + i) % 50_000}`,
          tenantId: `bench-${(from + i) % tenants}`,
          actorId: `user-${(from + i) % 1000}`,
          actorIp: '10.0.0.1',
          actorUserAgent: 'bench/1.0',
          after: { amount: from + i, currency: 'EUR' },
          traceId: randomUUID().replace(/-/g, ''),
          timestamp: new Date().toISOString(),
        },
        uuidV7Ids.next(),
      ),
    );
    await log.publish(topic, records);
  }
  const published = (performance.now() - t0) / 1000;
  progress(
    'audit-ingest',
    `published ${total.toLocaleString('en')} records in ${published.toFixed(1)} s (${Math.round(total / published).toLocaleString('en')}/s)`,
  );
  let stored = 0;
  const t1 = performance.now();
  const done = new Promise<void>((resolve, reject) => {
    void log
      .subscribe({
        groupId: `bench.${randomUUID()}`,
        topics: [topic],
        maxBatch: batch,
        eachBatch: async (records) => {
          try {
            const outcome = await ingestAuditRecords(
              platform.kernel.db,
              ch,
              records.map((r) => r.value),
              new Date(),
            );
            stored += outcome.stored;
            if (stored >= total) resolve();
          } catch (error) {
            reject(error instanceof Error ? error : new Error('the ingest failed'));
            throw error;
          }
        },
      })
      .then((s) => done.finally(() => s.stop()));
  });
  const ticker = setInterval(
    () => progress('audit-ingest', `stored ${stored.toLocaleString('en')}/${total.toLocaleString('en')}`),
    2000,
  );
  await done;
  clearInterval(ticker);
  const consumed = (performance.now() - t1) / 1000;
  const [row] = await ch.query<{ n: string; ids: string }>(
    `SELECT count() AS n, uniqExact(id) AS ids FROM ${ch.database}.audit_records`,
  );
  console.log(`machine: ${machine()}; log: ${log.kind}`);
  console.log(
    `records ${total}, tenants ${tenants}, batch ${batch}: consumed and stored in ${consumed.toFixed(1)} s → ${Math.round(total / consumed).toLocaleString('en')} records/s (end to end incl. publish: ${Math.round(total / (published + consumed)).toLocaleString('en')}/s); stored rows ${row?.n}, distinct ids ${row?.ids}`,
  );
  // the peer: the same rows, raw, in batches of the same size, into a table made like the audit table
  const raw = `${ch.database}.bench_raw_${randomUUID().replace(/-/g, '')}`;
  await ch.command(`CREATE TABLE ${raw} AS ${ch.database}.audit_records`);
  const rows = await ch.query<Record<string, unknown>>(
    `SELECT * FROM ${ch.database}.audit_records ORDER BY tenant_id, seq`,
  );
  const t2 = performance.now();
  for (let from = 0; from < rows.length; from += batch) await ch.insert(raw, rows.slice(from, from + batch));
  const rawSeconds = (performance.now() - t2) / 1000;
  const [check] = await ch.query<{ n: string }>(`SELECT count() AS n FROM ${raw}`);
  await ch.command(`DROP TABLE ${raw}`);
  if (Number(check?.n) !== rows.length) throw new Error(`raw insert: ${check?.n} rows of ${rows.length}`);
  console.log(
    `  peer, raw chdb INSERT of the same ${rows.length.toLocaleString('en')} rows in batches of ${batch} (same connection, JSONEachRow): ${rawSeconds.toFixed(1)} s → ${Math.round(rows.length / rawSeconds).toLocaleString('en')} records/s; ours ${((total / consumed / (rows.length / rawSeconds)) * 100).toFixed(0)} % of it (aim ≥ 50 %)`,
  );
  report({
    path: `audit ingest into chdb (${log.kind} log)`,
    figure: total / consumed,
    unit: 'records/s',
    aim: '≥ 50,000/s and ≥ 50 % of the peer',
    peer: 'raw chdb INSERT of the same rows, same batches',
    peerFigure: rows.length / rawSeconds,
  });
  report({
    path: 'audit ingest, end to end incl. publish',
    figure: total / (published + consumed),
    unit: 'records/s',
    aim: '',
  });
} finally {
  await platform.close();
}
