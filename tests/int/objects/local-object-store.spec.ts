import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { afterAll, describe, expect, it } from 'vitest';
import { createLocalObjectStore } from '../../../infra/objects/local';
import {
  verifyLocalPost,
  verifyLocalPresignature,
  type LocalPresignedRequest,
} from '../../../infra/objects/local-signature';
import { fixedClock } from '../../../infra/runtime/clock';
import { objectStoreContract } from './contract';

const SECRET = 'local-presign-secret';
const dataDirs: string[] = [];
const newDataDir = async () => {
  const dir = await mkdtemp(join(tmpdir(), 'platform-objects-'));
  dataDirs.push(dir);
  return dir;
};
afterAll(async () => {
  for (const dir of dataDirs) await rm(dir, { recursive: true, force: true });
});

objectStoreContract('local-folder object store', async () =>
  createLocalObjectStore({
    dataDir: await newDataDir(),
    publicBaseUrl: 'http://localhost:3000',
    signingSecret: SECRET,
  }),
);

/** what the future HTTP route will do with an incoming URL */
const parse = (url: string, method: 'GET' | 'PUT'): LocalPresignedRequest & { signature: string } => {
  const u = new URL(url);
  const contentType = u.searchParams.get('contentType');
  return {
    method,
    key: u.pathname.replace('/v1/objects/local/', '').split('/').map(decodeURIComponent).join('/'),
    expires: Number(u.searchParams.get('expires')),
    signature: u.searchParams.get('signature') ?? '',
    ...(contentType === null ? {} : { contentType }),
  };
};

describe('a local object store signing URLs at 10:00:00', () => {
  const now = new Date('2024-05-01T10:00:00Z');
  const store = async () =>
    createLocalObjectStore({
      dataDir: await newDataDir(),
      publicBaseUrl: 'https://app.example.test/',
      signingSecret: SECRET,
      clock: fixedClock(now),
    });

  it('hands out a GET URL under /v1/objects/local that verifies until it expires', async () => {
    const url = await (await store()).presignGet('t-1/files/report.pdf', 300);
    expect(url).toMatch(
      /^https:\/\/app\.example\.test\/v1\/objects\/local\/t-1\/files\/report\.pdf\?expires=1714557900&signature=[0-9a-f]{64}$/,
    );
    const request = parse(url, 'GET');
    expect(verifyLocalPresignature(SECRET, request, now.getTime() + 299_000)).toEqual({ valid: true });
    expect(verifyLocalPresignature(SECRET, request, now.getTime() + 300_000)).toEqual({
      valid: false,
      reason: 'expired',
    });
  });

  it('refuses a URL whose key, expiry, method or signature was changed', async () => {
    const request = parse(await (await store()).presignGet('t-1/a.txt', 300), 'GET');
    const at = now.getTime();
    expect(verifyLocalPresignature(SECRET, { ...request, key: 't-2/a.txt' }, at)).toEqual({
      valid: false,
      reason: 'bad-signature',
    });
    expect(verifyLocalPresignature(SECRET, { ...request, expires: request.expires + 3600 }, at)).toEqual({
      valid: false,
      reason: 'bad-signature',
    });
    expect(verifyLocalPresignature(SECRET, { ...request, method: 'PUT' }, at)).toEqual({
      valid: false,
      reason: 'bad-signature',
    });
    const flipped = request.signature.replace(/^./, (c) => (c === '0' ? '1' : '0'));
    expect(verifyLocalPresignature(SECRET, { ...request, signature: flipped }, at)).toEqual({
      valid: false,
      reason: 'bad-signature',
    });
    expect(verifyLocalPresignature('another-secret', request, at)).toEqual({ valid: false, reason: 'bad-signature' });
  });

  it('binds a PUT URL to its content type', async () => {
    const request = parse(await (await store()).presignPut('t-1/upload.png', 60, 'image/png'), 'PUT');
    expect(request.contentType).toBe('image/png');
    expect(verifyLocalPresignature(SECRET, request, now.getTime())).toEqual({ valid: true });
    expect(verifyLocalPresignature(SECRET, { ...request, contentType: 'text/html' }, now.getTime())).toEqual({
      valid: false,
      reason: 'bad-signature',
    });
  });
});

describe('a local object store handing out a form upload at 10:00:00', () => {
  const now = new Date('2024-05-01T10:00:00Z');
  const post = async () =>
    createLocalObjectStore({
      dataDir: await newDataDir(),
      publicBaseUrl: 'https://app.example.test',
      signingSecret: SECRET,
      clock: fixedClock(now),
    }).presignPost('t-1/_staging/f.png', { ttlSeconds: 900, contentType: 'image/png', minBytes: 1, maxBytes: 100 });

  it('posts to /v1/objects/local with fields whose signature covers key, type, size and expiry', async () => {
    const form = await post();
    expect(form.url).toBe('https://app.example.test/v1/objects/local');
    expect(form.expiresAt).toEqual(new Date('2024-05-01T10:15:00Z'));
    expect(verifyLocalPost(SECRET, form.fields, now.getTime())).toMatchObject({
      valid: true,
      policy: { key: 't-1/_staging/f.png', contentType: 'image/png', minBytes: 1, maxBytes: 100 },
    });
  });

  it('is refused once changed in any field, or expired', async () => {
    const { fields } = await post();
    for (const [name, value] of [
      ['key', 't-2/_staging/f.png'],
      ['Content-Type', 'text/html'],
      ['max', '1000000'],
      ['min', '0'],
      ['expires', String(Number(fields.expires) + 60)],
    ]) {
      expect(verifyLocalPost(SECRET, { ...fields, [name!]: value! }, now.getTime())).toEqual({
        valid: false,
        reason: 'bad-signature',
      });
    }
    expect(verifyLocalPost(SECRET, fields, now.getTime() + 900_000)).toEqual({ valid: false, reason: 'expired' });
  });
});

describe('a local object store holding an object under "t-1/a"', () => {
  it('stores another under "t-1/a/b" beside it, as S3 does', async () => {
    const store = createLocalObjectStore({
      dataDir: await newDataDir(),
      publicBaseUrl: 'http://localhost',
      signingSecret: SECRET,
    });
    await store.put('t-1/a', Buffer.from('parent'), { contentType: 'text/plain' });
    await store.put('t-1/a/b', Buffer.from('child'), { contentType: 'text/plain' });
    expect(await text(await store.get('t-1/a'))).toBe('parent');
    expect(await text(await store.get('t-1/a/b'))).toBe('child');
  });
});

describe('a local object store after writes', () => {
  it('keeps every file inside <dataDir>/objects and leaves no staging file behind', async () => {
    const dataDir = await newDataDir();
    const store = createLocalObjectStore({ dataDir, publicBaseUrl: 'http://localhost', signingSecret: SECRET });
    await store.put('t-1/x.txt', Buffer.from('x'), { contentType: 'text/plain' });
    await store.copy('t-1/x.txt', 't-1/y.txt');
    expect(await readdir(dataDir)).toEqual(['objects']);
    expect((await readdir(join(dataDir, 'objects', 't-1'))).sort()).toEqual([
      'x.txt~data',
      'x.txt~meta',
      'y.txt~data',
      'y.txt~meta',
    ]);
    expect(await readdir(join(dataDir, 'objects', '.staging'))).toEqual([]);
  });
});
