/**
 * Export of 1 million records (GET /audit/export, JSON and CSV, streamed): rows/s and the
 * process's peak memory, sampled every 100 ms while the export streams (aim: flat — it should not
 * grow with the number of records). Seeds one tenant with ClickHouse's generator.
 * Usage: source .test-infra/env; npx tsx bench/audit-export.ts [records=1000000] [format=json|csv]
 */
import { testToken } from '../tests/support/auth';
import { seedRecords, startAuditBench } from './audit-support';
import { machine } from './support';

const records = Number(process.argv[2] ?? 1_000_000);
const format = process.argv[3] === 'csv' ? 'csv' : 'json';
const { platform, ch } = await startAuditBench();
try {
  await seedRecords(ch, records, 1);
  const mb = (n: number) => Math.round(n / 2 ** 20);
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  const samples: number[] = [];
  const sampler = setInterval(() => {
    const rss = process.memoryUsage().rss;
    peak = Math.max(peak, rss);
    samples.push(rss);
  }, 100);
  const since = new Date(Date.now() - 2 * 86_400_000).toISOString();
  const until = new Date(Date.now() + 60_000).toISOString();
  const t = performance.now();
  const res = await fetch(`${platform.url}/v1/audit/export?format=${format}&since=${since}&until=${until}`, {
    headers: { authorization: `Bearer ${testToken('bench-0', 'bench', ['audit.export'])}` },
  });
  if (res.status !== 200 || !res.body) throw new Error(`export answered ${res.status}: ${await res.text()}`);
  let bytes = 0;
  let lines = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.length;
    for (const b of chunk) if (b === 10) lines += 1;
  }
  const seconds = (performance.now() - t) / 1000;
  clearInterval(sampler);
  // CSV: a header line; JSON: '[' then one line per record, then ']'
  const exported = format === 'csv' ? lines - 1 : lines - 2;
  const quarter = Math.max(1, Math.floor(samples.length / 4));
  const early = Math.max(...samples.slice(0, quarter));
  const late = Math.max(...samples.slice(-quarter));
  console.log(`machine: ${machine()}`);
  console.log(
    `${format}: ${exported.toLocaleString('en')} records, ${mb(bytes)} MiB in ${seconds.toFixed(1)} s → ${Math.round(exported / seconds).toLocaleString('en')} rows/s; rss before ${mb(baseline)} MiB, peak ${mb(peak)} MiB (first quarter ${mb(early)} MiB, last quarter ${mb(late)} MiB)`,
  );
} finally {
  await platform.close();
}
