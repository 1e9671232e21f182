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
import type { ObjectStore } from '../../../infra/objects/port';
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
objectStoreContract('S3 object store (S3Proxy)', async () => createS3ObjectStore({ ...connection, bucket, partSize: 5 * 1024 * 1024 }));

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
    url.searchParams.set('X-Amz-Signature', signature.replace(/^./, (c) => (c === '0' ? '1' : '0')));
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

    const upload = await fetch(url, { method: 'PUT', body: '{"ok":true}', headers: { 'content-type': 'application/json' } });
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
});
