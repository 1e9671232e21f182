/**
 * Upload throughput end to end (aim ≥ 50 files/s): files of 1 MB (random bytes: a document)
 * uploaded through POST /v1/files/upload by `concurrency` closed loops, each counted once the
 * scan with clamd released it (status available in the read model). Prints files/s from the first
 * upload to the last release, and the upload answer's latency. Peer in the same run: clamd's
 * INSTREAM alone (infra/scan's client, nothing else: no HTTP, no S3, no database) on the same
 * files, as many scans at once as the server runs (FILES_SCAN_CONCURRENCY below). Aim: ours ≥ 70 %
 * of it.
 * Usage: source .test-infra/env; npx tsx bench/files-upload.ts [files=500] [concurrency=16] [sizeMB=1]
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createClamdScanner } from '../infra/scan/clamd';
import { clamdEnv } from '../tests/support/files';
import { machine, progress, report, summarize } from './support';
import { MB, startFilesServer, waitUntil } from './files-support';

const files = Number(process.argv[2] ?? 500);
const concurrency = Number(process.argv[3] ?? 16);
const size = Math.round(Number(process.argv[4] ?? 1) * MB);

// clamd and the scan workers: as many scans at once as uploads in flight, up to 16
const scans = Math.min(16, concurrency);
const server = await startFilesServer({
  FILES_SCAN_CONCURRENCY: String(scans),
  FILES_STAGING_MAX_PER_TENANT: String(files + 1),
});
try {
  const tenant = `bench-${randomUUID()}`;
  const c = server.client(tenant);
  const warm = await c.upload(randomBytes(size), { originalName: 'warm.bin' });
  await waitUntil(async () => (await server.count(tenant, 'available')) === 1, 60_000, 'the warm-up file');

  const bodies = Array.from({ length: 8 }, () => randomBytes(size)); // contents vary; made before the clock starts
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < files; i = next++) {
        const t = performance.now();
        const answer = await c.upload(bodies[i % bodies.length]!, { originalName: `f-${i}.bin` });
        if (answer.status !== 201) throw new Error(`upload ${i}: ${answer.status} ${answer.text}`);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const uploaded = performance.now();
  await waitUntil(
    async () => (await server.count(tenant, 'available')) === files + 1,
    600_000,
    'every file to be released',
  );
  const released = performance.now();
  const rejected = await server.count(tenant, 'rejected');
  const l = summarize(latencies);
  console.log(
    `# files upload, end to end with clamd — ${machine()}, PostgreSQL, S3Proxy and clamd local; warm-up ${warm.status}`,
  );
  console.log(
    `${files} files of ${(size / MB).toFixed(1)} MB, ${concurrency} loops: ${(files / ((released - started) / 1000)).toFixed(1)} files/s to available (aim ≥ 50/s); ` +
      `uploads answered in ${((uploaded - started) / 1000).toFixed(1)} s (${(files / ((uploaded - started) / 1000)).toFixed(1)}/s), last release ${((released - uploaded) / 1000).toFixed(1)} s later; ` +
      `upload latency p50 ${l.p50.toFixed(0)} ms, p99 ${l.p99.toFixed(0)} ms; rejected ${rejected}`,
  );
  // the peer: the same files through clamd's INSTREAM alone, `scans` at once
  progress('files-upload', `peer: clamd INSTREAM alone, ${files} files, ${scans} at once`);
  const clamd = clamdEnv();
  const scanner = createClamdScanner({ host: clamd.CLAMD_HOST, port: Number(clamd.CLAMD_PORT), timeoutMs: 120_000 });
  await scanner.scan(bodies[0]!); // warm, as the upload's warm-up file
  let nextScan = 0;
  let clean = 0;
  const scanStarted = performance.now();
  await Promise.all(
    Array.from({ length: scans }, async () => {
      for (let i = nextScan++; i < files; i = nextScan++)
        if ((await scanner.scan(bodies[i % bodies.length]!)).clean) clean += 1;
    }),
  );
  const scanSeconds = (performance.now() - scanStarted) / 1000;
  const ours = files / ((released - started) / 1000);
  console.log(
    `  peer, clamd INSTREAM alone on the same ${files} files, ${scans} at once: ${(files / scanSeconds).toFixed(1)} files/s (clean ${clean}); ours ${((ours / (files / scanSeconds)) * 100).toFixed(0)} % of it (aim ≥ 70 %)`,
  );
  report({
    path: `${(size / MB).toFixed(1)} MB uploads to available with clamd`,
    figure: ours,
    unit: 'files/s',
    aim: '≥ 50/s and ≥ 70 % of the peer',
    peer: `clamd INSTREAM alone, same files, ${scans} at once`,
    peerFigure: files / scanSeconds,
  });
} finally {
  await server.stop();
}
