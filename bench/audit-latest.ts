/**
 * A tenant's latest 100 records (GET /audit's query, newest first, both audit tables) with
 * 10 million rows stored. Aim: p99 < 50 ms. Seeds with ClickHouse's generator, then runs the
 * query for random tenants, and the same through HTTP.
 * Usage: source .test-infra/env; npx tsx bench/audit-latest.ts [rows=10000000] [tenants=100] [queries=500]
 */
import { listRecords } from '../projections/audit/queries';
import { testToken } from '../tests/support/auth';
import { seedRecords, startAuditBench } from './audit-support';
import { machine, summarize } from './support';

const rows = Number(process.argv[2] ?? 10_000_000);
const tenants = Number(process.argv[3] ?? 100);
const queries = Number(process.argv[4] ?? 500);
const { platform, ch } = await startAuditBench();
try {
  await seedRecords(ch, rows, tenants);
  const query: number[] = [];
  for (let i = 0; i < queries; i += 1) {
    const tenantId = `bench-${Math.floor(Math.random() * tenants)}`;
    const t = performance.now();
    const page = await listRecords(ch, tenantId, { filter: {}, limit: 101, order: 'newest' });
    query.push(performance.now() - t);
    if (page.length !== 101 && rows / tenants >= 101) throw new Error(`expected 101 rows, got ${page.length}`);
  }
  const http: number[] = [];
  for (let i = 0; i < queries; i += 1) {
    const tenantId = `bench-${Math.floor(Math.random() * tenants)}`;
    const token = testToken(tenantId, 'bench', ['audit.read']);
    const t = performance.now();
    const res = await fetch(`${platform.url}/v1/audit?page_size=100`, {
      headers: { authorization: `Bearer ${token}` },
    });
    await res.arrayBuffer();
    http.push(performance.now() - t);
  }
  const q = summarize(query);
  const h = summarize(http);
  console.log(`machine: ${machine()}`);
  console.log(
    `rows ${rows.toLocaleString('en')}, tenants ${tenants}: latest 100 query p50 ${q.p50.toFixed(1)} ms, p99 ${q.p99.toFixed(1)} ms; GET /v1/audit?page_size=100 p50 ${h.p50.toFixed(1)} ms, p99 ${h.p99.toFixed(1)} ms (n=${q.n})`,
  );
} finally {
  await platform.close();
}
