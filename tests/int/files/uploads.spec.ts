import { randomBytes } from 'node:crypto';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIT_TOPIC } from '../../../infra/audit';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import type { SmtpCapture } from '../../support/smtp-capture';
import { startSmtpCapture } from '../../support/smtp-capture';
import { sendSlowly } from '../../support/slow-sender';
import type { Answer, FilesClient } from '../../support/files';
import {
  chunked,
  clamdEnv,
  EICAR,
  eventually,
  fetchLink,
  filesClient,
  multipartBody,
  seedOwner,
  testBucket,
  topicEvents,
  uniqueTenant,
  waitForStatus,
} from '../../support/files';

/**
 * Uploads end to end on real engines (S3Proxy, clamd, PostgreSQL): streamed to staging, scanned,
 * released or rejected, downloaded. Runs in both topologies: in the split run every upload streams
 * through the gateway to write-api, and the scan runs in the workers role.
 */
let p: TestPlatform;
let smtp: SmtpCapture;
const bucket = testBucket();
const startedAt = Date.now();
const tenant = uniqueTenant('uploads');
let c: FilesClient;

beforeAll(async () => {
  smtp = await startSmtpCapture();
  p = await startTestPlatform({
    services: ['files'],
    env: {
      ...bucket.env,
      ...clamdEnv(),
      SMTP_URL: smtp.url,
      FILES_WORKER_POLL_MS: '50',
      FILES_MAX_IMAGE_SIZE_MB: '0.5',
      FILES_MAX_DOCUMENT_SIZE_MB: '2',
    },
  });
  c = filesClient(p.url, tenant);
});
afterAll(async () => {
  await p?.close();
  await smtp?.close();
  await bucket.drop();
});

const problem = (answer: Answer, status: number, suffix: string) => {
  expect({ status: answer.status, type: answer.body?.type }).toEqual({
    status,
    type: expect.stringMatching(new RegExp(`/${suffix}$`)),
  });
  expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
};

const uploadAvailable = async (bytes: Buffer, fields: Parameters<FilesClient['upload']>[1] = {}) => {
  const res = await c.upload(bytes, fields);
  expect(res.status).toBe(201);
  await waitForStatus(c, res.body.id, 'available');
  return res.body.id as string;
};

describe('a clean file uploaded to documents', () => {
  const bytes = randomBytes(300_000);
  let id: string;
  let answer: Answer;
  beforeAll(async () => {
    answer = await c.upload(bytes, { originalName: 'data.bin', meta: '{"project":"apollo","n":1}' });
    id = answer.body.id;
  });

  it('answers 201 with the file pending_scan and no url', () => {
    expect(answer.status).toBe(201);
    expect(answer.body).toMatchObject({
      originalName: 'data.bin',
      mimeType: 'application/octet-stream',
      size: 300_000,
      bucket: 'documents',
      status: 'pending_scan',
      url: null,
      thumbnails: {},
      uploadedBy: 'u-uploader',
      tenantId: tenant,
      deletedAt: null,
      scanStatus: null,
      meta: { project: 'apollo', n: 1 },
    });
  });

  it('becomes available after its scan, and downloads byte-identical as an attachment', async () => {
    await waitForStatus(c, id, 'available');
    const meta = await c.get(`/files/${id}?meta=1`);
    expect(meta.body).toMatchObject({
      status: 'available',
      scanStatus: 'clean',
      url: expect.stringContaining(`/v1/files/${id}/content?`),
    });
    const download = await fetch(`${p.url}/v1/files/${id}?download=1`, { headers: c.auth });
    expect(download.status).toBe(200);
    expect(download.headers.get('content-disposition')).toBe(
      `attachment; filename="data.bin"; filename*=UTF-8''data.bin`,
    );
    expect(download.headers.get('x-content-type-options')).toBe('nosniff');
    expect(download.headers.get('content-type')).toBe('application/octet-stream');
    expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('publishes files.file.uploaded with its size, for billing', async () => {
    const uploaded = await eventually(async () =>
      (await topicEvents(p.kernel, 'platform.files.events', startedAt)).find(
        (e) => e.type === 'files.file.uploaded' && e.data.fileId === id,
      ),
    );
    expect(uploaded).toMatchObject({
      tenantId: tenant,
      data: { sizeBytes: 300_000, tenantId: tenant, bucket: 'documents', scanStatus: 'clean' },
    });
  });

  it('redirects GET /files/:id to a short-lived signed link that needs no token', async () => {
    const redirect = await c.get(`/files/${id}`);
    expect(redirect.status).toBe(302);
    const link = redirect.headers.get('location')!;
    expect(new URL(link).searchParams.get('tenant')).toBe(tenant);
    const content = await fetchLink(p.url, link);
    expect(content.status).toBe(200);
    // bytes of no known type: a browser would download them anyway, and only inert types are served inline
    expect(content.headers.get('content-disposition')).toMatch(/^attachment; filename="data.bin"/);
    expect(content.headers.get('x-content-type-options')).toBe('nosniff');
    expect(content.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(Buffer.from(await content.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('gives links for ttlSeconds from 1 to 86,400 (300 by default)', async () => {
    const before = Date.now();
    const standard = await c.get(`/files/${id}/url`);
    expect(standard.status).toBe(200);
    expect(Date.parse(standard.body.expiresAt) - before).toBeGreaterThan(298_000);
    expect(Date.parse(standard.body.expiresAt) - before).toBeLessThan(302_000);
    const day = await c.get(`/files/${id}/url?ttlSeconds=86400`);
    expect(Date.parse(day.body.expiresAt) - before).toBeGreaterThan(86_398_000);
    problem(await c.get(`/files/${id}/url?ttlSeconds=86401`), 400, 'validation-error');
    problem(await c.get(`/files/${id}/url?ttlSeconds=0`), 400, 'validation-error');
  });

  it('serves byte ranges (206) and refuses one beyond the end (416)', async () => {
    const first = await fetch(`${p.url}/v1/files/${id}?download=1`, { headers: { ...c.auth, range: 'bytes=0-9' } });
    expect(first.status).toBe(206);
    expect(first.headers.get('content-range')).toBe('bytes 0-9/300000');
    expect(Buffer.from(await first.arrayBuffer()).equals(bytes.subarray(0, 10))).toBe(true);
    const link = (await c.get(`/files/${id}/url`)).body.url as string;
    const tail = await fetchLink(p.url, link, { headers: { range: 'bytes=-100' } });
    expect(tail.status).toBe(206);
    expect(Buffer.from(await tail.arrayBuffer()).equals(bytes.subarray(-100))).toBe(true);
    const beyond = await fetchLink(p.url, link, { headers: { range: 'bytes=300000-' } });
    expect(beyond.status).toBe(416);
    expect(beyond.headers.get('content-range')).toBe('bytes */300000');
  });
});

describe('the list of files', () => {
  it('filters by bucket and uploader, newest first, in pages', async () => {
    const tenant = uniqueTenant('list');
    const alice = filesClient(p.url, tenant, 'u-alice');
    const bob = filesClient(p.url, tenant, 'u-bob');
    const ids: string[] = [];
    for (const [who, bucket] of [
      [alice, 'assets'],
      [bob, 'assets'],
      [alice, 'documents'],
      [alice, 'assets'],
    ] as const) {
      const up = await who.upload(Buffer.from(`list ${ids.length}`), {
        bucket,
        originalName: `n${ids.length}.txt`,
        mimeType: 'text/plain',
      });
      ids.push(up.body.id as string);
      await waitForStatus(who, up.body.id, 'available');
    }
    const listed = async (query: string) =>
      ((await alice.get(`/files?${query}`)).body.data as { id: string }[]).map((f) => f.id);
    expect(await listed('bucket=assets')).toEqual([ids[3], ids[1], ids[0]]);
    expect(await listed('uploadedBy=u-alice&bucket=assets')).toEqual([ids[3], ids[0]]);
    const first = await alice.get('/files?page_size=3');
    expect(first.body.data.map((f: { id: string }) => f.id)).toEqual([ids[3], ids[2], ids[1]]);
    const rest = await alice.get(
      `/files?page_size=3&page_token=${encodeURIComponent(first.body.next_page_token as string)}`,
    );
    expect(rest.body.data.map((f: { id: string }) => f.id)).toEqual([ids[0]]);
    problem(await alice.get('/files?bucket=photos'), 400, 'validation-error');
  });
});

describe('the EICAR test file', () => {
  let id: string;
  beforeAll(async () => {
    await seedOwner(p.kernel.db, tenant, 'u-owner', 'owner@uploads.test');
    const answer = await c.upload(EICAR, { originalName: 'invoice.pdf.exe' });
    expect(answer.status).toBe(201);
    id = answer.body.id;
    await waitForStatus(c, id, 'rejected');
  });

  it('is rejected: 422 file-rejected for its content, its links and its url', async () => {
    problem(await c.get(`/files/${id}`), 422, 'file-rejected');
    problem(await c.get(`/files/${id}?download=1`), 422, 'file-rejected');
    problem(await c.get(`/files/${id}/url`), 422, 'file-rejected');
  });

  it('is removed from staging: nothing of it is left in the store', async () => {
    expect((await bucket.keys()).filter((k) => k.includes(id))).toEqual([]);
  });

  it("is reported to the tenant's Owners by mail", async () => {
    const mail = await smtp.waitFor(
      (m) => m.envelope.to.includes('owner@uploads.test') && (m.parsed.text ?? '').includes(id),
      20_000,
    );
    expect(mail.parsed.subject).toMatch(/malware/i);
    expect(mail.parsed.text).toMatch(/Eicar/i);
  });

  it('is audited as files.file.rejected with the signature', async () => {
    const record = await eventually(async () =>
      (await topicEvents(p.kernel, AUDIT_TOPIC, startedAt)).find(
        (e) => e.data?.entityId === id && e.data.action === 'files.file.rejected',
      ),
    );
    expect(record.data).toMatchObject({
      entityType: 'file',
      tenantId: tenant,
      actorId: 'system',
      after: { status: 'rejected', reason: 'infected', signature: expect.stringMatching(/eicar/i) },
    });
  });
});

/** a ZIP local file header (30 bytes) + name + data, with the encryption flag (bit 0) as given */
const zipEntry = (name: string, data: Buffer, flags: number): Buffer => {
  const header = Buffer.alloc(30);
  header.writeUInt32LE(0x04034b50, 0);
  header.writeUInt16LE(20, 4);
  header.writeUInt16LE(flags, 6);
  header.writeUInt32LE(data.length, 18);
  header.writeUInt32LE(data.length, 22);
  header.writeUInt16LE(Buffer.byteLength(name), 26);
  return Buffer.concat([header, Buffer.from(name), data]);
};

describe('content a scanner cannot see into', () => {
  it.each([
    [
      'a ZIP with an encrypted entry',
      Buffer.concat([zipEntry('readme.txt', Buffer.from('hello'), 0), zipEntry('secret.bin', randomBytes(2000), 1)]),
      'bundle.zip',
    ],
    [
      'a PDF with an /Encrypt dictionary',
      Buffer.from('%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R /Encrypt 2 0 R >>\n%%EOF\n'),
      'locked.pdf',
    ],
  ])('is not passed as clean: %s is rejected (encrypted) and removed', async (_label, bytes, name) => {
    const answer = await c.upload(bytes, { originalName: name });
    expect(answer.status).toBe(201);
    await waitForStatus(c, answer.body.id, 'rejected');
    expect((await c.get(`/files/${answer.body.id}`)).body).toMatchObject({ status: 422, reason: 'encrypted' });
    expect((await bucket.keys()).filter((k) => k.includes(answer.body.id as string))).toEqual([]);
  });
});

describe('the type of an upload', () => {
  it('comes from its bytes, never from the client: PNG bytes named and typed as a PDF are image/png', async () => {
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#08f' } })
      .png()
      .toBuffer();
    const answer = await c.upload(png, { originalName: 'report.pdf', mimeType: 'application/pdf', bucket: 'assets' });
    expect(answer.body).toMatchObject({ mimeType: 'image/png', originalName: 'report.pdf' });
  });

  it('is text/plain for HTML sent as text/html: content is never served as a page', async () => {
    const id = await uploadAvailable(Buffer.from('<html><script>alert(document.cookie)</script></html>'), {
      originalName: 'page.html',
      mimeType: 'text/html',
    });
    const content = await fetchLink(p.url, (await c.get(`/files/${id}/url`)).body.url);
    expect(content.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(content.headers.get('x-content-type-options')).toBe('nosniff');
    // plain text is inert: the link shows it inline
    expect(content.headers.get('content-disposition')).toMatch(/^inline; filename="page.html"/);
  });
});

describe('active content uploaded (an SVG with a script)', () => {
  // with its XML prolog file-type detects application/xml, which a browser renders (as SVG) where it is served
  const svg = Buffer.from(
    '<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(document.domain)</script></svg>\n',
  );
  let id: string;
  beforeAll(async () => {
    id = await uploadAvailable(svg, { originalName: 'logo.svg', mimeType: 'image/svg+xml', bucket: 'assets' });
  });

  /** a browser neither shows it as a page nor runs it: an attachment, under no renderable type, sniffing off, sandboxed */
  const expectInert = (res: Response, label: string, status = 200) => {
    expect([label, res.status]).toEqual([label, status]);
    expect([label, res.headers.get('content-disposition')]).toEqual([
      label,
      expect.stringMatching(/^attachment; filename="logo\.svg"/),
    ]);
    expect([label, res.headers.get('content-type')]).toEqual([label, 'application/octet-stream']);
    expect([label, res.headers.get('x-content-type-options')]).toEqual([label, 'nosniff']);
    const policy = res.headers.get('content-security-policy') ?? '';
    expect([label, policy]).toEqual([label, expect.stringContaining("default-src 'none'")]);
    expect([label, policy.split(';').map((d) => d.trim())]).toEqual([label, expect.arrayContaining(['sandbox'])]);
  };

  it('is served by its signed link as an attachment of no renderable type', async () => {
    const redirect = await c.get(`/files/${id}`);
    expect(redirect.status).toBe(302);
    const content = await fetchLink(p.url, redirect.headers.get('location')!);
    expectInert(content, 'signed link');
    expect(Buffer.from(await content.arrayBuffer()).equals(svg)).toBe(true);
    // a range of it too
    expectInert(
      await fetchLink(p.url, (await c.get(`/files/${id}/url`)).body.url, { headers: { range: 'bytes=0-9' } }),
      'range',
      206,
    );
  });

  it('is downloaded (?download=1) the same way', async () => {
    const download = await fetch(`${p.url}/v1/files/${id}?download=1`, { headers: c.auth });
    expectInert(download, 'download');
    expect(Buffer.from(await download.arrayBuffer()).equals(svg)).toBe(true);
  });

  it('keeps its detected type in the File object', async () => {
    expect((await c.get(`/files/${id}?meta=1`)).body).toMatchObject({ mimeType: 'application/xml' });
  });

  it('leaves a picture inline under its own type, in the same sandbox', async () => {
    const png = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#f80' } })
      .png()
      .toBuffer();
    const picture = await uploadAvailable(png, { originalName: 'dot.png', bucket: 'assets' });
    const content = await fetchLink(p.url, (await c.get(`/files/${picture}/url`)).body.url);
    expect(content.headers.get('content-disposition')).toMatch(/^inline; filename="dot\.png"/);
    expect(content.headers.get('content-type')).toBe('image/png');
    expect(content.headers.get('content-security-policy')).toContain('sandbox');
  });
});

describe('size limits (here: images 0.5 MB, documents 2 MB)', () => {
  const streamed = async (bytes: Buffer, fields: Record<string, string>) => {
    const { body, contentType } = multipartBody(fields, bytes);
    const res = await fetch(`${p.url}/v1/files/upload`, {
      method: 'POST',
      headers: { ...c.auth, 'content-type': contentType },
      body: chunked(body),
      duplex: 'half',
    });
    return { status: res.status, body: await res.json() };
  };

  it('refuses an image over its limit with 413, measured while it streams (no Content-Length)', async () => {
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#f80' } })
      .png()
      .toBuffer();
    const answer = await streamed(Buffer.concat([png, randomBytes(600_000)]), {
      bucket: 'assets',
      originalName: 'big.png',
    });
    expect(answer).toMatchObject({
      status: 413,
      body: { type: expect.stringMatching(/\/payload-too-large$/), kind: 'image', maxBytes: 524_288 },
    });
  });

  it('gives the 413 found while streaming to a client still sending, and keeps its connection', async () => {
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#0f8' } })
      .png()
      .toBuffer();
    const { body, contentType } = multipartBody(
      { bucket: 'assets', originalName: 'still-sending.png' },
      Buffer.concat([png, randomBytes(1_000_000)]),
    );
    // past the image limit (0.5 MB) but far from the end: the refusal comes while the body is on its way
    const outcome = await sendSlowly(p.url, {
      method: 'POST',
      path: '/v1/files/upload',
      headers: { ...c.auth, 'content-type': contentType },
      body,
      sendBeforeAnswer: 600_000,
    });
    expect(outcome).toEqual({
      first: expect.stringMatching(/^HTTP\/1\.1 413/),
      second: expect.stringMatching(/^HTTP\/1\.1 200/),
    });
  });

  it('refuses a document over its limit with 413 while it streams, and keeps none of it', async () => {
    const answer = await streamed(randomBytes(2_200_000), { bucket: 'documents', originalName: 'big.bin' });
    expect(answer).toMatchObject({ status: 413, body: { kind: 'document', maxBytes: 2_097_152 } });
    await eventually(
      async () => ((await bucket.keys()).some((k) => k.startsWith('_staging/')) ? undefined : true),
      10_000,
      'staging to be empty',
    );
  });

  it('refuses a body whose Content-Length is over the limit before reading it', async () => {
    const { body, contentType } = multipartBody(
      { bucket: 'documents', originalName: 'declared.bin' },
      randomBytes(2_300_000),
    );
    const res = await fetch(`${p.url}/v1/files/upload`, {
      method: 'POST',
      headers: { ...c.auth, 'content-type': contentType, 'content-length': String(body.length) },
      body,
    });
    const answer = { status: res.status, type: ((await res.json()) as { type?: unknown }).type };
    expect(answer).toEqual({ status: 413, type: expect.stringMatching(/\/payload-too-large$/) });
  });

  it('accepts a document just under its limit', async () => {
    const answer = await c.upload(randomBytes(2_000_000), { originalName: 'fits.bin' });
    expect(answer.status).toBe(201);
  });
});

describe('an upload that is not right', () => {
  it('refuses meta over 4 KB or not an object, an unknown bucket, a missing name or file', async () => {
    const bytes = Buffer.from('content');
    problem(await c.upload(bytes, { meta: JSON.stringify({ note: 'x'.repeat(4100) }) }), 400, 'validation-error');
    problem(await c.upload(bytes, { meta: '[1,2]' }), 400, 'validation-error');
    problem(await c.upload(bytes, { bucket: 'photos' }), 400, 'bucket-invalid');
    const noName = multipartBody({ bucket: 'documents' }, bytes);
    const unnamed = await fetch(`${p.url}/v1/files/upload`, {
      method: 'POST',
      headers: { ...c.auth, 'content-type': noName.contentType },
      body: noName.body,
    });
    expect([unnamed.status, ((await unnamed.json()) as { errors: unknown }).errors]).toEqual([
      400,
      [expect.objectContaining({ field: 'originalName', code: 'REQUIRED' })],
    ]);
    const noFile = new FormData();
    noFile.append('bucket', 'documents');
    noFile.append('originalName', 'nothing.txt');
    const res = await fetch(`${p.url}/v1/files/upload`, { method: 'POST', headers: c.auth, body: noFile });
    expect([res.status, ((await res.json()) as { errors: unknown }).errors]).toEqual([
      400,
      [expect.objectContaining({ field: 'file' })],
    ]);
  });

  it('refuses a JSON body with 415, no token with 401, and a token without files.write with 403', async () => {
    problem(await c.post('/files/upload', { bucket: 'documents' }), 415, 'unsupported-media-type');
    const form = c.form(Buffer.from('x'), {});
    expect((await fetch(`${p.url}/v1/files/upload`, { method: 'POST', body: form })).status).toBe(401);
    const reader = filesClient(p.url, tenant, 'u-reader', ['files.read']);
    expect((await reader.upload(Buffer.from('x'))).status).toBe(403);
  });
});

describe('file names with NUL, CRLF, ../, quotes and 300 bytes', () => {
  const names = {
    nul: 'in\u0000voice.txt',
    crlf: 'report\r\nSet-Cookie: stolen=1.txt',
    traversal: '../../../etc/passwd',
    quotes: 'say "hello"; filename="evil.html".txt',
    long: `${'ü'.repeat(148)}.txt`,
  };

  it.each(Object.entries(names))('stores and serves %s safely', async (_label, name) => {
    const bytes = Buffer.from(`content of ${_label}`);
    const answer = await c.upload(bytes, { originalName: name, mimeType: 'text/plain' });
    expect(answer.status).toBe(201);
    const stored = answer.body.originalName as string;
    expect(stored).not.toMatch(/[\r\n/\\]/);
    expect(stored).not.toContain('\u0000');
    expect(Buffer.byteLength(stored)).toBeLessThanOrEqual(255);
    await waitForStatus(c, answer.body.id, 'available');
    const download = await fetch(`${p.url}/v1/files/${answer.body.id}?download=1`, { headers: c.auth });
    const disposition = download.headers.get('content-disposition')!;
    expect(disposition).toMatch(/^attachment; filename="[^"\r\n]*"; filename\*=UTF-8''[A-Za-z0-9%._~!-]+$/);
    expect(download.headers.get('set-cookie')).toBeNull();
    expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true);
  });
});
