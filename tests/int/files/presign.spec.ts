import { randomBytes } from 'node:crypto';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestClock } from '../../support/clock';
import { offsetClock } from '../../support/clock';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import type { Body, FilesClient } from '../../support/files';
import { clamdEnv, EICAR, eventually, filesClient, testBucket, uniqueTenant, waitForStatus } from '../../support/files';

/**
 * Presigned uploads: the platform signs a POST form (S3's POST policy, checked by S3Proxy itself),
 * the client sends the bytes straight to the store, and the scan starts by itself once they are there.
 */
let p: TestPlatform;
let clock: TestClock;
const bucket = testBucket();
let c: FilesClient;

beforeAll(async () => {
  clock = offsetClock();
  p = await startTestPlatform({
    services: ['files'],
    clock,
    env: { ...bucket.env, ...clamdEnv(), FILES_WORKER_POLL_MS: '50' },
  });
  c = filesClient(p.url, uniqueTenant('presign'));
});
afterAll(async () => {
  await p?.close();
  await bucket.drop();
});

/** the form as a browser sends it: the signed fields, then the file */
const send = async (presigned: Body, bytes: Buffer, type: string) => {
  const form = new FormData();
  for (const [name, value] of Object.entries(presigned.fields as Record<string, string>)) form.append(name, value);
  form.append('file', new Blob([bytes], { type }), 'upload');
  const res = await fetch(presigned.uploadUrl, { method: 'POST', body: form });
  return { status: res.status, text: await res.text() };
};

const presign = (body: Record<string, unknown>) =>
  c.post('/files/presign', { bucket: 'assets', originalName: 'photo.png', mimeType: 'image/png', ...body });

describe('a presigned upload of a picture', () => {
  let png: Buffer;
  let answer: { status: number; body: Body };
  beforeAll(async () => {
    png = await sharp({ create: { width: 400, height: 300, channels: 3, background: '#3a6' } })
      .png()
      .toBuffer();
    answer = await presign({ sizeBytes: png.length });
  });

  it('answers 200 with an upload form valid 15 minutes, the file waiting in staging', async () => {
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      uploadUrl: `${bucket.env.S3_ENDPOINT}/${bucket.name}`,
      fileId: expect.any(String),
      fields: expect.objectContaining({ 'Content-Type': 'image/png' }),
    });
    const minutes = (Date.parse(answer.body.expiresAt) - clock.now().getTime()) / 60_000;
    expect(minutes).toBeGreaterThan(14.9);
    expect(minutes).toBeLessThanOrEqual(15);
    expect((await c.get('/files?status=pending_scan')).body.data.map((f: Body) => f.id)).toContain(answer.body.fileId);
  });

  it('is scanned and released by itself once S3 has the bytes, with its thumbnails', async () => {
    expect((await send(answer.body, png, 'image/png')).status).toBe(204);
    await waitForStatus(c, answer.body.fileId, 'available');
    const file = (await c.get(`/files/${answer.body.fileId}?meta=1`)).body;
    expect(file).toMatchObject({
      mimeType: 'image/png',
      size: png.length,
      scanStatus: 'clean',
      originalName: 'photo.png',
    });
    // made right after the release
    const thumbnails = await eventually(async () => {
      const made = Object.keys((await c.get(`/files/${answer.body.fileId}?meta=1`)).body.thumbnails).sort();
      return made.length === 2 ? made : undefined;
    });
    expect(thumbnails).toEqual(['card_300', 'icon_32']);
  });
});

describe('a presigned form used wrongly', () => {
  it('is refused by S3 itself when the body is over its size condition', async () => {
    const form = await presign({ sizeBytes: 1000 });
    const sent = await send(form.body, randomBytes(1001), 'image/png');
    expect(sent.status).toBe(400);
    expect(sent.text).toMatch(/EntityTooLarge/);
  });

  it('is refused by S3 itself with a tampered signature', async () => {
    const form = await presign({ sizeBytes: 1000 });
    form.body.fields['x-amz-signature'] = (form.body.fields['x-amz-signature'] as string).replace(/^./, (ch) =>
      ch === '0' ? '1' : '0',
    );
    expect((await send(form.body, randomBytes(500), 'image/png')).status).toBe(403);
  });

  it('is refused by S3 itself once expired', async () => {
    clock.advance(-20 * 60_000); // signed twenty minutes ago, valid fifteen
    const form = await presign({ sizeBytes: 1000 });
    clock.reset();
    const sent = await send(form.body, randomBytes(500), 'image/png');
    expect(sent.status).toBe(403);
    expect(sent.text).toMatch(/expired/i);
  });

  it('is not handed out for a size over the limit of its type, an unknown bucket or a bad type', async () => {
    expect((await presign({ sizeBytes: 10 * 1_048_576 + 1 })).body).toMatchObject({ status: 413, kind: 'image' });
    expect((await presign({ sizeBytes: 40 * 1_048_576, mimeType: 'application/pdf' })).status).toBe(200);
    expect((await presign({ sizeBytes: 1000, bucket: 'photos' })).body.type).toMatch(/\/bucket-invalid$/);
    expect((await presign({ sizeBytes: 1000, mimeType: 'not a type' })).status).toBe(400);
    expect((await presign({ sizeBytes: 0 })).status).toBe(400);
  });
});

describe('the bytes behind a presigned form', () => {
  it('decide its type: a PDF sent for image/png is application/pdf once released', async () => {
    const pdf = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');
    const form = await presign({ sizeBytes: pdf.length, originalName: 'not-a-photo.png' });
    expect((await send(form.body, pdf, 'image/png')).status).toBe(204);
    await waitForStatus(c, form.body.fileId, 'available');
    expect((await c.get(`/files/${form.body.fileId}?meta=1`)).body.mimeType).toBe('application/pdf');
  });

  it('are scanned like any upload: EICAR is rejected', async () => {
    const form = await presign({
      sizeBytes: EICAR.length,
      mimeType: 'application/octet-stream',
      originalName: 'tool.exe',
      bucket: 'documents',
    });
    expect((await send(form.body, EICAR, 'application/octet-stream')).status).toBe(204);
    await waitForStatus(c, form.body.fileId, 'rejected');
    expect((await c.get(`/files/${form.body.fileId}`)).body).toMatchObject({ status: 422, reason: 'infected' });
  });

  it('over the limit of their detected type are rejected (too-large): a picture presigned as a PDF is held to the image limit', async () => {
    const picture = Buffer.concat([
      await sharp({ create: { width: 8, height: 8, channels: 3, background: '#000' } })
        .png()
        .toBuffer(),
      randomBytes(10 * 1_048_576),
    ]);
    const form = await presign({
      sizeBytes: picture.length,
      mimeType: 'application/pdf',
      originalName: 'report.pdf',
      bucket: 'documents',
    });
    expect(form.status).toBe(200);
    expect((await send(form.body, picture, 'application/pdf')).status).toBe(204);
    await waitForStatus(c, form.body.fileId, 'rejected', 60_000);
    expect((await c.get(`/files/${form.body.fileId}`)).body).toMatchObject({ status: 422, reason: 'too-large' });
  });

  it('that never arrive leave the file rejected (upload-missing) an hour after the form expired', async () => {
    const form = await presign({ sizeBytes: 1000 });
    clock.advance(60 * 60_000);
    expect((await c.get(`/files?status=pending_scan`)).body.data.map((f: Body) => f.id)).toContain(form.body.fileId);
    clock.advance(20 * 60_000);
    await waitForStatus(c, form.body.fileId, 'rejected');
    expect((await c.get(`/files/${form.body.fileId}`)).body.reason).toBe('upload-missing');
    clock.reset();
  });
});
