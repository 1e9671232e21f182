/**
 * Thumbnail latency for a 12-megapixel JPEG (aim p99 < 1 s): `count` copies of one 4000×3000
 * photo-like JPEG are uploaded and released (their automatic icon_32 and card_300 made), then
 * GET /v1/files/:id/thumbnail/preview_600 is asked once per file, one at a time — each a first
 * request, so each answer includes reading the original, decoding, resizing, encoding WebP,
 * storing it and recording it. A second request per file (kept thumbnail) is timed as well.
 * Usage: source .test-infra/env; npx tsx bench/files-thumbnail.ts [count=50]
 */
import { randomUUID } from 'node:crypto';
import sharp from 'sharp';
import { machine, summarize } from './support';
import { MB, startFilesServer, waitUntil } from './files-support';

const count = Number(process.argv[2] ?? 50);

// a photo-like picture: smooth gradients with mild noise (a JPEG of a few MB, as a camera's)
const width = 4000;
const height = 3000;
const gradient = Buffer.alloc(width * height * 3);
for (let y = 0; y < height; y += 1) {
  for (let x = 0; x < width; x += 1) {
    const at = (y * width + x) * 3;
    gradient[at] = (x * 255) / width;
    gradient[at + 1] = (y * 255) / height;
    gradient[at + 2] = ((x + y) * 127) / (width + height) + 64;
  }
}
let seed = 0x9e3779b9;
for (let i = 0; i < gradient.length; i += 1) {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5; // xorshift32: noise of ±12
  gradient[i] = Math.max(0, Math.min(255, gradient[i]! + ((seed >>> 0) % 25) - 12));
}
const jpeg = await sharp(gradient, { raw: { width, height, channels: 3 } })
  .jpeg({ quality: 88 })
  .toBuffer();

const server = await startFilesServer({ FILES_STAGING_MAX_PER_TENANT: String(count + 1) });
try {
  const tenant = `bench-${randomUUID()}`;
  const c = server.client(tenant);
  const ids: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const answer = await c.upload(jpeg, { bucket: 'assets', originalName: `photo-${i}.jpg` });
    if (answer.status !== 201) throw new Error(`upload ${i}: ${answer.status} ${answer.text}`);
    ids.push(answer.body.id as string);
  }
  await waitUntil(
    async () => (await server.count(tenant, 'available')) === count,
    600_000,
    'every picture to be released',
  );
  // the automatic thumbnails are made on release: wait for them, so that they do not share the cores with the timed requests
  await waitUntil(
    async () =>
      (
        await server.database.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM rm.files_files WHERE tenant_id = $1 AND thumbnails ? 'card_300' AND thumbnails ? 'icon_32'`,
          [tenant],
        )
      ).rows[0]!.n === count,
    600_000,
    'the automatic thumbnails',
  );

  const time = async (id: string): Promise<number> => {
    const t = performance.now();
    const answer = await c.get(`/files/${id}/thumbnail/preview_600`);
    if (answer.status !== 302) throw new Error(`thumbnail of ${id}: ${answer.status} ${answer.text}`);
    return performance.now() - t;
  };
  const first: number[] = [];
  for (const id of ids) first.push(await time(id));
  const kept: number[] = [];
  for (const id of ids) kept.push(await time(id));
  const f = summarize(first);
  const k = summarize(kept);
  console.log(
    `# files thumbnail — ${machine()}, PostgreSQL and S3Proxy local, sharp ${sharp.versions.sharp} (libvips ${sharp.versions.vips})`,
  );
  console.log(
    `preview_600 of a ${width}×${height} JPEG (${(jpeg.length / MB).toFixed(1)} MB), ${count} files one at a time: first request p50 ${f.p50.toFixed(0)} ms, p99 ${f.p99.toFixed(0)} ms, max ${Math.max(...first).toFixed(0)} ms (aim p99 < 1 s); ` +
      `kept thumbnail p50 ${k.p50.toFixed(1)} ms, p99 ${k.p99.toFixed(1)} ms`,
  );
} finally {
  await server.stop();
}
