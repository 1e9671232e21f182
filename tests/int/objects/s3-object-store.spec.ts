import { randomUUID } from 'node:crypto';
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  ListObjectsV2Command,
  S3Client,
} from '@aws-sdk/client-s3';
import { text } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ObjectStore, PresignedPost } from '../../../infra/objects/port';
import { createS3ObjectStore, type S3ObjectStoreOptions } from '../../../infra/objects/s3';
import { fixedClock } from '../../../infra/runtime/clock';
import { requireEnv } from '../../support/env';
import { objectStoreContract } from './contract';

const endpoint = requireEnv('TEST_S3_ENDPOINT');
const bucket = `platform-test-${process.pid}-${Date.now()}`;
const connection: Omit<S3ObjectStoreOptions, 'bucket'> = {
  endpoint,
  region: process.env.TEST_S3_REGION || 'us-east-1',
  accessKeyId: requireEnv('TEST_S3_ACCESS_KEY'),
  secretAccessKey: requireEnv('TEST_S3_SECRET_KEY'),
};
// The bucket is the one thing the adapter expects to exist; the test provisions it like an operator would.
const admin = new S3Client({
  endpoint,
  region: connection.region,
  forcePathStyle: true,
  credentials: { accessKeyId: connection.accessKeyId, secretAccessKey: connection.secretAccessKey },
});
beforeAll(async () => {
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
});
afterAll(async () => {
  for (;;) {
    const { Contents = [] } = await admin.send(new ListObjectsV2Command({ Bucket: bucket }));
    if (Contents.length === 0) break;
    for (const { Key } of Contents) await admin.send(new DeleteObjectCommand({ Bucket: bucket, Key }));
  }
  await admin.send(new DeleteBucketCommand({ Bucket: bucket }));
  admin.destroy();
});

// Parts of 5 MiB (S3's minimum), so the 11 MiB stream of the contract goes up as a three-part upload.
objectStoreContract('S3 object store (S3Proxy)', async () =>
  createS3ObjectStore({ ...connection, bucket, partSize: 5 * 1024 * 1024 }),
);

describe('an S3 object store holding one object', () => {
  let store: ObjectStore;
  const key = `t-1/${randomUUID()}/report.txt`;

  beforeAll(async () => {
    store = createS3ObjectStore({ ...connection, bucket });
    await store.put(key, Buffer.from('quarterly numbers'), { contentType: 'text/plain' });
  });
  afterAll(async () => {
    await store?.close();
  });

  it('hands out a GET URL that a plain fetch can use', async () => {
    const response = await fetch(await store.presignGet(key, 60));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain');
    expect(await response.text()).toBe('quarterly numbers');
  });

  it('refuses a GET URL pointed at another key', async () => {
    const url = new URL(await store.presignGet(key, 60));
    url.pathname = url.pathname.replace('report.txt', 'other.txt');
    expect((await fetch(url)).status).toBe(403);
  });

  it('refuses a GET URL whose signature was changed', async () => {
    const url = new URL(await store.presignGet(key, 60));
    const signature = url.searchParams.get('X-Amz-Signature') ?? '';
    url.searchParams.set(
      'X-Amz-Signature',
      signature.replace(/^./, (c) => (c === '0' ? '1' : '0')),
    );
    expect((await fetch(url)).status).toBe(403);
  });

  it('refuses a GET URL whose lifetime was stretched', async () => {
    const url = new URL(await store.presignGet(key, 60));
    url.searchParams.set('X-Amz-Expires', '3600');
    expect((await fetch(url)).status).toBe(403);
  });

  it('refuses a GET URL that has expired', async () => {
    // Signed ten minutes ago for one minute: the signature is good, the time is not.
    const past = createS3ObjectStore({ ...connection, bucket, clock: fixedClock(new Date(Date.now() - 600_000)) });
    const response = await fetch(await past.presignGet(key, 60));
    expect(response.status).toBe(403);
    expect(await response.text()).toMatch(/expired/i);
    await past.close();
  });

  it('hands out a PUT URL that uploads with its content type, and refuses another type', async () => {
    const uploadKey = `t-1/${randomUUID()}/upload.json`;
    const url = await store.presignPut(uploadKey, 60, 'application/json');

    const wrongType = await fetch(url, { method: 'PUT', body: '{}', headers: { 'content-type': 'text/html' } });
    expect(wrongType.status).toBe(403);
    expect(await store.head(uploadKey)).toBeNull();

    const upload = await fetch(url, {
      method: 'PUT',
      body: '{"ok":true}',
      headers: { 'content-type': 'application/json' },
    });
    expect(upload.status).toBe(200);
    expect(await text(await store.get(uploadKey))).toBe('{"ok":true}');
    expect(await store.head(uploadKey)).toMatchObject({ contentType: 'application/json' });
  });
});

describe('an S3 object store whose bucket does not exist', () => {
  it('fails its ping', async () => {
    const store = createS3ObjectStore({ ...connection, bucket: `missing-${randomUUID()}` });
    await expect(store.ping()).rejects.toThrow();
    await store.close();
  });

  it('creates the bucket with ensureBucket, once even when asked twice at the same time', async () => {
    const name = `created-${randomUUID()}`;
    const store = createS3ObjectStore({ ...connection, bucket: name });
    await Promise.all([store.ensureBucket(), store.ensureBucket()]);
    await expect(store.ping()).resolves.toBeUndefined();
    await admin.send(new DeleteBucketCommand({ Bucket: name }));
    await store.close();
  });
});

/** sends a presigned POST form as a browser would: the fields, then the file */
const postForm = async (post: PresignedPost, body: Buffer, contentType: string) => {
  const form = new FormData();
  for (const [name, value] of Object.entries(post.fields)) form.append(name, value);
  form.append('file', new Blob([body], { type: contentType }), 'upload.bin');
  const response = await fetch(post.url, { method: 'POST', body: form });
  return { status: response.status, text: await response.text() };
};

describe('an S3 object store handing out a form upload for image/png of 1..100 bytes', () => {
  let store: ObjectStore;
  const limits = { ttlSeconds: 60, contentType: 'image/png', minBytes: 1, maxBytes: 100 };
  beforeAll(() => {
    store = createS3ObjectStore({ ...connection, bucket });
  });
  afterAll(async () => {
    await store?.close();
  });

  it('is accepted by S3 with a body within the range, under the signed key', async () => {
    const key = `t-1/${randomUUID()}/post.png`;
    const post = await store.presignPost(key, limits);
    expect(post.url).toBe(`${endpoint}/${bucket}`);
    expect((await postForm(post, Buffer.alloc(100, 7), 'image/png')).status).toBe(204);
    expect(await store.head(key)).toMatchObject({ size: 100, contentType: 'image/png' });
  });

  it('is refused by S3 itself for a body over its size condition', async () => {
    const key = `t-1/${randomUUID()}/big.png`;
    const answer = await postForm(await store.presignPost(key, limits), Buffer.alloc(101, 7), 'image/png');
    expect(answer.status).toBe(400);
    expect(answer.text).toMatch(/EntityTooLarge/);
    expect(await store.head(key)).toBeNull();
  });

  it('is refused by S3 itself with a tampered signature', async () => {
    const key = `t-1/${randomUUID()}/tampered.png`;
    const post = await store.presignPost(key, limits);
    const signature = post.fields['x-amz-signature']!;
    post.fields['x-amz-signature'] = signature.replace(/^./, (c) => (c === '0' ? '1' : '0'));
    expect((await postForm(post, Buffer.alloc(10, 7), 'image/png')).status).toBe(403);
    expect(await store.head(key)).toBeNull();
  });

  it('is refused by S3 itself once expired', async () => {
    const key = `t-1/${randomUUID()}/late.png`;
    const past = createS3ObjectStore({ ...connection, bucket, clock: fixedClock(new Date(Date.now() - 600_000)) });
    const answer = await postForm(await past.presignPost(key, limits), Buffer.alloc(10, 7), 'image/png');
    expect(answer.status).toBe(403);
    expect(answer.text).toMatch(/expired/i);
    expect(await store.head(key)).toBeNull();
    await past.close();
  });

  it('is refused by S3 itself with another content type or another key', async () => {
    const key = `t-1/${randomUUID()}/typed.png`;
    const retyped = await store.presignPost(key, limits);
    retyped.fields['Content-Type'] = 'text/html';
    expect((await postForm(retyped, Buffer.from('<script>'), 'text/html')).status).toBe(403);
    const rekeyed = await store.presignPost(key, limits);
    rekeyed.fields.key = `t-2/${randomUUID()}/elsewhere.png`;
    expect((await postForm(rekeyed, Buffer.alloc(10, 7), 'image/png')).status).toBe(403);
    expect(await store.head(key)).toBeNull();
    expect(await store.head(rekeyed.fields.key)).toBeNull();
  });
});
