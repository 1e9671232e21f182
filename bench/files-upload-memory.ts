/**
 * Peak memory of a 50 MB upload (aim < 32 MB above idle): the server process's resident memory
 * (VmRSS, sampled every 10 ms) while one streamed upload of generated content (chunked, no
 * Content-Length) goes in, is scanned with clamd and released, against its level at idle just
 * before — after a warm-up upload of 1 MB that loads the paths (parsers, S3 client, clamd socket).
 * The client generates the content as it sends it, in this process: nothing of it is in the server's.
 * Usage: source .test-infra/env; npx tsx bench/files-upload-memory.ts [sizeMB=50] [runs=3]
 */
import { randomUUID } from 'node:crypto';
import { streamUpload } from '../tests/support/files';
import { machine } from './support';
import { MB, startFilesServer, waitUntil } from './files-support';

const size = Math.round(Number(process.argv[2] ?? 50) * MB);
const runs = Number(process.argv[3] ?? 3);

const server = await startFilesServer({ FILES_MAX_DOCUMENT_SIZE_MB: String(Math.max(50, Math.ceil(size / MB))) });
try {
  const tenant = `bench-${randomUUID()}`;
  const c = server.client(tenant);
  let released = 0;
  const uploadAndRelease = async (bytes: number) => {
    const { answer } = await streamUpload(server.url, c.auth, bytes);
    if (answer.status !== 201) throw new Error(`upload: ${answer.status} ${answer.text}`);
    released += 1;
    await waitUntil(async () => (await server.count(tenant, 'available')) === released, 300_000, 'the release');
  };
  await uploadAndRelease(MB);
  const results: { idle: number; peak: number; seconds: number }[] = [];
  for (let run = 0; run < runs; run += 1) {
    await new Promise((r) => setTimeout(r, 2000)); // settle to idle
    const idle = server.rss();
    let peak = idle;
    const timer = setInterval(() => {
      peak = Math.max(peak, server.rss());
    }, 10);
    const t = performance.now();
    try {
      await uploadAndRelease(size);
    } finally {
      clearInterval(timer);
    }
    results.push({ idle, peak: Math.max(peak, server.rss()), seconds: (performance.now() - t) / 1000 });
  }
  console.log(
    `# files upload memory — ${machine()}, PostgreSQL, S3Proxy and clamd local; server: one process, role all`,
  );
  for (const [i, r] of results.entries()) {
    console.log(
      `run ${i + 1}: ${(size / MB).toFixed(0)} MB upload to available in ${r.seconds.toFixed(1)} s; RSS idle ${(r.idle / MB).toFixed(1)} MB, peak ${(r.peak / MB).toFixed(1)} MB, ` +
        `${((r.peak - r.idle) / MB).toFixed(1)} MB above idle (aim < 32 MB)`,
    );
  }
} finally {
  await server.stop();
}
