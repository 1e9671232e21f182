import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { filesContext } from '../../../commands/files/context';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import { allInOneOnly } from '../../support/all-in-one-only';
import type { Answer, FilesClient } from '../../support/files';
import {
  clamdEnv,
  eventually,
  fetchLink,
  filesClient,
  peakGrowth,
  testBucket,
  topicEvents,
  uniqueTenant,
  waitForStatus,
} from '../../support/files';
import { corruptPng, dimensionsOf, pixelFloodPng, solidPng } from '../../support/images';

/**
 * Thumbnails (automatic and on demand) and image processing with sharp: operations in order,
 * a job whose status is readable, the original kept on failure, decompression bombs and corrupt
 * pictures refused (422) without the memory a decoding would take.
 */
const MB = 1_048_576;
let p: TestPlatform;
const bucket = testBucket();
const startedAt = Date.now();
let c: FilesClient;

beforeAll(async () => {
  p = await startTestPlatform({
    services: ['files'],
    env: { ...bucket.env, ...clamdEnv(), FILES_WORKER_POLL_MS: '50' },
  });
  c = filesClient(p.url, uniqueTenant('images'));
});
afterAll(async () => {
  await p?.close();
  await bucket.drop();
});

const problem = (answer: Answer, status: number, suffix: string) =>
  expect({ status: answer.status, type: answer.body?.type }).toEqual({
    status,
    type: expect.stringMatching(new RegExp(`/${suffix}$`)),
  });

const uploadImage = async (bytes: Buffer, name = 'picture.png'): Promise<string> => {
  const answer = await c.upload(bytes, { bucket: 'assets', originalName: name });
  expect(answer.status).toBe(201);
  await waitForStatus(c, answer.body.id, 'available');
  return answer.body.id;
};
const thumbnailsOf = async (id: string): Promise<Record<string, string>> =>
  (await c.get(`/files/${id}?meta=1`)).body.thumbnails;
const fetchThumbnail = async (id: string, preset: string) => {
  const redirect = await c.get(`/files/${id}/thumbnail/${preset}`);
  expect(redirect.status).toBe(302);
  const res = await fetchLink(p.url, redirect.headers.get('location')!);
  expect(res.status).toBe(200);
  return { type: res.headers.get('content-type'), ...(await dimensionsOf(Buffer.from(await res.arrayBuffer()))) };
};

describe('a 640x480 picture', () => {
  let id: string;
  beforeAll(async () => {
    id = await uploadImage(await solidPng(640, 480));
  });

  it('gets icon_32 and card_300 on release', async () => {
    await eventually(async () => (Object.keys(await thumbnailsOf(id)).length === 2 ? true : undefined));
    expect(Object.keys(await thumbnailsOf(id)).sort()).toEqual(['card_300', 'icon_32']);
    expect(await fetchThumbnail(id, 'icon_32')).toEqual({ type: 'image/webp', width: 32, height: 32, format: 'webp' });
    expect(await fetchThumbnail(id, 'card_300')).toMatchObject({ width: 300, height: 200 });
  });

  it('gets avatar_64, preview_600 and full_1200 on the first request, then keeps them', async () => {
    expect(await fetchThumbnail(id, 'avatar_64')).toMatchObject({ width: 64, height: 64 });
    expect(await fetchThumbnail(id, 'preview_600')).toMatchObject({ width: 533, height: 400 });
    expect(await fetchThumbnail(id, 'full_1200')).toMatchObject({ width: 640, height: 480 }); // never enlarged
    await fetchThumbnail(id, 'avatar_64');
    expect(Object.keys(await thumbnailsOf(id)).sort()).toEqual([
      'avatar_64',
      'card_300',
      'full_1200',
      'icon_32',
      'preview_600',
    ]);
    const made = await eventually(async () => {
      const events = (await topicEvents(p.kernel, 'platform.files.events', startedAt)).filter(
        (e) => e.data.fileId === id && e.type === 'files.file.thumbnail_created',
      );
      return events.length >= 5 ? events : undefined;
    });
    expect(made.filter((e) => e.data.preset === 'avatar_64')).toHaveLength(1);
  });

  it('answers 404 preset-not-found for an unknown preset', async () => {
    problem(await c.get(`/files/${id}/thumbnail/huge_9000`), 404, 'preset-not-found');
  });

  it('is processed by a job: crop, resize keeping the aspect, a quarter turn, WebP; the old content goes', async () => {
    const started = await c.post(`/files/${id}/process`, {
      operations: [
        { type: 'crop', x: 40, y: 0, width: 560, height: 480 },
        { type: 'resize', width: 280 },
        { type: 'rotate', degrees: 90 },
        { type: 'convert', format: 'webp' },
      ],
      quality: 70,
    });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({
      fileId: id,
      jobId: expect.any(String),
      status: 'processing',
      startedAt: expect.any(String),
    });
    const job = await eventually(async () => {
      const read = (await c.get(`/files/${id}/jobs/${started.body.jobId}`)).body;
      return read.status === 'processing' ? undefined : read;
    });
    expect(job).toMatchObject({ status: 'completed', finishedAt: expect.any(String), error: null });
    const file = (await c.get(`/files/${id}?meta=1`)).body;
    expect(file.mimeType).toBe('image/webp');
    const content = await fetch(`${p.url}/v1/files/${id}?download=1`, { headers: c.auth });
    expect(await dimensionsOf(Buffer.from(await content.arrayBuffer()))).toEqual({
      width: 240,
      height: 280,
      format: 'webp',
    });
    // S3Proxy's filesystem store lists an object being written under a temporary name (<key>-<uuid>)
    // until it is renamed into place: wait for the final names, not for any three names
    const keys = await eventually(async () => {
      const now = (await bucket.keys()).filter((k) => k.includes(id));
      return now.every((k) => /\/v2(-card_300|-icon_32)?$/.test(k)) && now.length === 3 ? now : undefined;
    });
    expect(keys.sort()).toEqual([
      expect.stringMatching(/\/v2$/),
      expect.stringMatching(/\/v2-card_300$/),
      expect.stringMatching(/\/v2-icon_32$/),
    ]);
    const processed = await eventually(async () =>
      (await topicEvents(p.kernel, 'platform.files.events', startedAt)).find(
        (e) => e.data.fileId === id && e.type === 'files.file.processed',
      ),
    );
    expect(processed.data).toMatchObject({
      sizeBytes: file.size,
      previousSizeBytes: expect.any(Number),
      contentVersion: 2,
    });
  });

  it('refuses operations that do not fit: 400 for a bad list or quality, 422 for a crop outside the picture', async () => {
    problem(
      await c.post(`/files/${id}/process`, { operations: [{ type: 'blur', sigma: 3 }] }),
      400,
      'validation-error',
    );
    problem(
      await c.post(`/files/${id}/process`, { operations: [{ type: 'rotate', degrees: 90 }], quality: 0 }),
      400,
      'validation-error',
    );
    problem(
      await c.post(`/files/${id}/process`, { operations: [{ type: 'crop', x: 200, y: 0, width: 200, height: 10 }] }),
      422,
      'processing-failed',
    );
  });
});

describe('files that are no picture to process', () => {
  it('answer 422 processing-failed for a thumbnail or a job', async () => {
    const text = await c.upload(Buffer.from('plain text'), { originalName: 'notes.txt', mimeType: 'text/plain' });
    await waitForStatus(c, text.body.id, 'available');
    problem(await c.get(`/files/${text.body.id}/thumbnail/icon_32`), 422, 'processing-failed');
    problem(
      await c.post(`/files/${text.body.id}/process`, { operations: [{ type: 'rotate', degrees: 90 }] }),
      422,
      'processing-failed',
    );
  });

  it('answer 422 for a corrupt PNG, which keeps no thumbnails', async () => {
    const id = await uploadImage(await corruptPng(), 'broken.png');
    problem(await c.get(`/files/${id}/thumbnail/icon_32`), 422, 'processing-failed');
    problem(
      await c.post(`/files/${id}/process`, { operations: [{ type: 'resize', width: 10 }] }),
      422,
      'processing-failed',
    );
    expect(await thumbnailsOf(id)).toEqual({});
  });

  it('answer 422 for a pixel flood (15,000² pixels in 27 KB), refused before decoding: memory stays bounded', async () => {
    const bomb = await pixelFloodPng(15_000);
    expect(bomb.length).toBeLessThan(100_000);
    const { result: id, growth } = await peakGrowth(p.pids, async () => {
      const uploaded = await uploadImage(bomb, 'flood.png');
      problem(await c.get(`/files/${uploaded}/thumbnail/icon_32`), 422, 'processing-failed');
      problem(await c.get(`/files/${uploaded}/thumbnail/full_1200`), 422, 'processing-failed');
      problem(
        await c.post(`/files/${uploaded}/process`, { operations: [{ type: 'resize', width: 100 }] }),
        422,
        'processing-failed',
      );
      return uploaded;
    });
    expect((await c.get(`/files/${id}/thumbnail/icon_32`)).body.detail).toMatch(/more pixels than allowed/);
    // decoded, the picture is 225 MB of gray (675 MB as RGB): refused from its header, nothing near that is held
    for (const [role, bytes] of Object.entries(growth))
      expect(bytes, `${role} grew by ${Math.round(bytes / MB)} MB`).toBeLessThan(96 * MB);
  });
});

describe('a job that runs out of time', () => {
  allInOneOnly('shortens the processing deadline of the running process')(
    'fails with a timeout and keeps the original content',
    async () => {
      const id = await uploadImage(await solidPng(800, 600), 'slow.png');
      const before = (await c.get(`/files/${id}?meta=1`)).body;
      const settings = filesContext(p.kernel).settings;
      const deadline = settings.processingTimeoutMs;
      settings.processingTimeoutMs = 1;
      try {
        const started = await c.post(`/files/${id}/process`, {
          operations: [
            { type: 'resize', width: 400 },
            { type: 'convert', format: 'avif' },
          ],
        });
        expect(started.status).toBe(202);
        const job = await eventually(async () => {
          const read = (await c.get(`/files/${id}/jobs/${started.body.jobId}`)).body;
          return read.status === 'processing' ? undefined : read;
        });
        expect(job).toMatchObject({
          status: 'failed',
          error: expect.stringMatching(/^timeout: .* the original is kept$/),
        });
      } finally {
        settings.processingTimeoutMs = deadline;
      }
      const after = (await c.get(`/files/${id}?meta=1`)).body;
      expect(after).toMatchObject({ mimeType: before.mimeType, size: before.size, status: 'available' });
      expect((await bucket.keys()).filter((k) => k.includes(id) && /\/v\d+$/.test(k))).toEqual([
        expect.stringMatching(/\/v1$/),
      ]);
    },
  );
});
