import type { Readable } from 'node:stream';
import type { Clock } from '../runtime/clock';
import { systemClock } from '../runtime/clock';
import {
  assertObjectKey,
  assertPrefix,
  assertRange,
  assertTtlSeconds,
  encodeKeyPath,
  ObjectNotFoundError,
  type ObjectStore,
} from './port';
import { signPostPolicy } from './s3-post-policy';
import { lazyImport } from '../runtime/lazy';

// the AWS SDK costs a process ~250 ms of its start; it is loaded when the store is first used
const loadSdk = lazyImport(async () => ({
  ...(await import('@aws-sdk/client-s3')),
  ...(await import('@aws-sdk/s3-request-presigner')),
}));

export interface S3ObjectStoreOptions {
  /** S3_ENDPOINT; path-style addressing, so MinIO, S3Proxy, R2 and AWS all work */
  endpoint: string;
  region?: string;
  /** S3_ACCESS_KEY / S3_SECRET_KEY */
  accessKeyId: string;
  secretAccessKey: string;
  /** S3_BUCKET; ensureBucket creates it when missing */
  bucket: string;
  clock?: Clock;
  /** a streamed body is sent in parts of this size (S3's minimum is 5 MiB) */
  partSize?: number;
}

const isNotFound = (error: unknown) => {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404;
};

/**
 * Reads up to `size` bytes into a part of its own; fewer means the stream has ended. The bytes are
 * copied into the part as they arrive (no concatenation of the chunks, no part kept alive by a
 * leftover that is a slice of it): one part, and the chunk in hand, is what an upload holds.
 */
const readPart = async (
  source: AsyncIterator<Buffer>,
  carry: { rest: Buffer | null },
  size: number,
): Promise<{ chunk: Buffer; ended: boolean }> => {
  const part = Buffer.allocUnsafeSlow(size);
  let filled = 0;
  const take = (bytes: Buffer): Buffer | null => {
    const n = Math.min(bytes.length, size - filled);
    bytes.copy(part, filled, 0, n);
    filled += n;
    return n < bytes.length ? bytes.subarray(n) : null;
  };
  if (carry.rest) carry.rest = take(carry.rest);
  while (filled < size) {
    const next = await source.next();
    if (next.done) return { chunk: part.subarray(0, filled), ended: true };
    carry.rest = take(Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value));
  }
  return { chunk: part, ended: false };
};

/**
 * Production: S3 or any S3-compatible store. A Buffer goes up in one PUT. A stream is read in parts:
 * one that ends within the first part goes up in one PUT too, a longer one as a multipart upload,
 * so memory stays at one part whatever the size, and S3 never needs the length up front.
 */
export const createS3ObjectStore = (options: S3ObjectStoreOptions): ObjectStore => {
  const clock = options.clock ?? systemClock;
  const Bucket = options.bucket;
  const partSize = options.partSize ?? 5 * 1024 * 1024; // S3's smallest part: the least an upload holds
  const s3 = lazyImport(async () => {
    const sdk = await loadSdk();
    const client = new sdk.S3Client({
      endpoint: options.endpoint,
      region: options.region ?? 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey },
      // The SDK's default CRC checksums (aws-chunked uploads, x-amz-checksum-*) are AWS extensions that
      // S3-compatible stores do not all speak; send them only where an operation requires one.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      // a store that stops answering mid-request must not hold a part upload (or a reader) forever
      requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000 },
    });
    return { sdk, client };
  });
  const region = options.region ?? 'us-east-1';

  const putStream = async (Key: string, body: Readable, ContentType: string) => {
    const { sdk, client } = await s3();
    const source = body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    const carry = { rest: null as Buffer | null };
    const first = await readPart(source, carry, partSize);
    if (first.ended) {
      await client.send(new sdk.PutObjectCommand({ Bucket, Key, Body: first.chunk, ContentType }));
      return;
    }
    const { UploadId } = await client.send(new sdk.CreateMultipartUploadCommand({ Bucket, Key, ContentType }));
    try {
      const parts: { ETag: string | undefined; PartNumber: number }[] = [];
      let part = first;
      for (let PartNumber = 1; ; PartNumber++) {
        const { ETag } = await client.send(
          new sdk.UploadPartCommand({ Bucket, Key, UploadId, PartNumber, Body: part.chunk }),
        );
        parts.push({ ETag, PartNumber });
        if (part.ended) break;
        part = await readPart(source, carry, partSize);
        if (part.ended && part.chunk.length === 0) break;
      }
      await client.send(
        new sdk.CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts: parts } }),
      );
    } catch (error) {
      // An abandoned upload keeps its parts (and its cost) until aborted.
      await client.send(new sdk.AbortMultipartUploadCommand({ Bucket, Key, UploadId })).catch(() => undefined);
      throw error;
    }
  };

  const store: ObjectStore = {
    kind: 's3',
    async put(key, body, { contentType }) {
      const { sdk, client } = await s3();
      assertObjectKey(key);
      if (Buffer.isBuffer(body))
        await client.send(new sdk.PutObjectCommand({ Bucket, Key: key, Body: body, ContentType: contentType }));
      else await putStream(key, body, contentType);
    },
    async get(key, getOptions) {
      const { sdk, client } = await s3();
      assertObjectKey(key);
      const range = getOptions?.range;
      assertRange(range);
      try {
        const { Body } = await client.send(
          new sdk.GetObjectCommand({
            Bucket,
            Key: key,
            ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
          }),
        );
        return Body as Readable; // in Node the SDK hands back the response stream
      } catch (error) {
        if (isNotFound(error)) throw new ObjectNotFoundError(key);
        throw error;
      }
    },
    async head(key) {
      const { sdk, client } = await s3();
      assertObjectKey(key);
      try {
        const out = await client.send(new sdk.HeadObjectCommand({ Bucket, Key: key }));
        return {
          key,
          size: out.ContentLength ?? 0,
          contentType: out.ContentType ?? 'application/octet-stream',
          etag: out.ETag ?? '',
          lastModified: out.LastModified ?? new Date(0),
        };
      } catch (error) {
        if (isNotFound(error)) return null;
        throw error;
      }
    },
    async delete(key) {
      const { sdk, client } = await s3();
      assertObjectKey(key);
      await client.send(new sdk.DeleteObjectCommand({ Bucket, Key: key }));
    },
    async copy(fromKey, toKey) {
      const { sdk, client } = await s3();
      assertObjectKey(fromKey);
      assertObjectKey(toKey);
      try {
        await client.send(
          new sdk.CopyObjectCommand({ Bucket, Key: toKey, CopySource: `${Bucket}/${encodeKeyPath(fromKey)}` }),
        );
      } catch (error) {
        if (isNotFound(error)) throw new ObjectNotFoundError(fromKey);
        throw error;
      }
    },
    async move(fromKey, toKey) {
      await store.copy(fromKey, toKey);
      await store.delete(fromKey);
    },
    async list(prefix, listOptions = {}) {
      const { sdk, client } = await s3();
      assertPrefix(prefix);
      const out = await client.send(
        new sdk.ListObjectsV2Command({
          Bucket,
          Prefix: prefix || undefined,
          StartAfter: listOptions.startAfter,
          MaxKeys: listOptions.limit ?? 1000,
        }),
      );
      return {
        objects: (out.Contents ?? []).map((o) => ({
          key: o.Key!,
          size: o.Size ?? 0,
          lastModified: o.LastModified ?? new Date(0),
        })),
        more: out.IsTruncated === true,
      };
    },
    async presignGet(key, ttlSeconds) {
      const { sdk, client } = await s3();
      assertObjectKey(key);
      assertTtlSeconds(ttlSeconds);
      return sdk.getSignedUrl(client, new sdk.GetObjectCommand({ Bucket, Key: key }), {
        expiresIn: ttlSeconds,
        signingDate: clock.now(),
      });
    },
    async presignPut(key, ttlSeconds, contentType) {
      const { sdk, client } = await s3();
      assertObjectKey(key);
      assertTtlSeconds(ttlSeconds);
      // Content-Type is signed as a header, so the uploader must send exactly this type.
      return sdk.getSignedUrl(client, new sdk.PutObjectCommand({ Bucket, Key: key, ContentType: contentType }), {
        expiresIn: ttlSeconds,
        signingDate: clock.now(),
        signableHeaders: new Set(['content-type']),
      });
    },
    async presignPost(key, postOptions) {
      assertObjectKey(key);
      assertTtlSeconds(postOptions.ttlSeconds);
      return signPostPolicy(
        {
          endpoint: options.endpoint,
          bucket: Bucket,
          region,
          accessKeyId: options.accessKeyId,
          secretAccessKey: options.secretAccessKey,
        },
        key,
        postOptions,
        clock.now(),
      );
    },
    async ensureBucket() {
      const { sdk, client } = await s3();
      try {
        await client.send(new sdk.HeadBucketCommand({ Bucket }));
      } catch (error) {
        if (!isNotFound(error)) throw error;
        // two processes starting together may both create it: the loser's "already owned" is success
        await client.send(new sdk.CreateBucketCommand({ Bucket })).catch((e: { name?: string }) => {
          if (e.name !== 'BucketAlreadyOwnedByYou' && e.name !== 'BucketAlreadyExists') throw e;
        });
      }
    },
    async ping() {
      const { sdk, client } = await s3();
      await client.send(new sdk.HeadBucketCommand({ Bucket }));
    },
    async close() {
      // a client that never opened has nothing to close; one that failed to open neither
      if (s3.started)
        await s3().then(
          ({ client }) => client.destroy(),
          () => undefined,
        );
    },
  };
  return store;
};
