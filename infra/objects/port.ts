import type { Readable } from 'node:stream';

/**
 * Uploaded files and generated documents. S3 in production; a local folder for `npm start`.
 * Both adapters pass one contract suite (tests/int/objects/contract.ts).
 *
 * Keys are chosen by our code (tenant id, file id, …), never taken raw from a request, and both
 * adapters accept the same conservative set (see assertObjectKey), so a key that works locally
 * works on S3 and cannot climb out of the local folder.
 *
 * Portable keys never use a whole key as the folder of another ("a" and "a/b"): S3 and the local
 * adapter allow it, but S3-compatible stores kept on a file system (S3Proxy's filesystem backend,
 * used in tests) refuse the second write.
 */
export interface ObjectHead {
  key: string;
  size: number;
  contentType: string;
  /** opaque content tag, quoted like S3's ETag */
  etag: string;
  lastModified: Date;
}

export interface ObjectStore {
  readonly kind: 'local' | 's3';
  /** stores or replaces the object; a stream is consumed to its end */
  put(key: string, body: Buffer | Readable, options: { contentType: string }): Promise<void>;
  /** the object's bytes; rejects with ObjectNotFoundError when there is none */
  get(key: string): Promise<Readable>;
  /** metadata, or null when there is no such object */
  head(key: string): Promise<ObjectHead | null>;
  /** removes the object; removing a missing one is not an error */
  delete(key: string): Promise<void>;
  /** rejects with ObjectNotFoundError when the source does not exist */
  copy(fromKey: string, toKey: string): Promise<void>;
  /** a URL anyone holding it can GET the object with, until ttlSeconds pass */
  presignGet(key: string, ttlSeconds: number): Promise<string>;
  /** a URL to PUT the object with, with exactly this Content-Type, until ttlSeconds pass */
  presignPut(key: string, ttlSeconds: number, contentType: string): Promise<string>;
  /** throws when the store cannot be reached */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export class ObjectNotFoundError extends Error {
  readonly code = 'object-not-found';
  constructor(readonly key: string) {
    super(`no object under key ${JSON.stringify(key)}`);
    this.name = 'ObjectNotFoundError';
  }
}

export class InvalidObjectKeyError extends Error {
  readonly code = 'invalid-object-key';
  constructor(readonly key: string, reason: string) {
    super(`invalid object key ${JSON.stringify(key)}: ${reason}`);
    this.name = 'InvalidObjectKeyError';
  }
}

// S3's "safe" characters minus the few that mean something in a URL or a shell. '~' is left out on
// purpose: the local adapter uses it to mark its own files, so no key can collide with them.
const SEGMENT = /^[A-Za-z0-9._=+@-]+$/;

/** Keys are '/'-separated segments; no empty, '.' or '..' segment, so no key names a path outside its store. */
export const assertObjectKey = (key: string): void => {
  if (key.length === 0 || key.length > 1024) throw new InvalidObjectKeyError(key, 'length must be 1..1024');
  for (const segment of key.split('/')) {
    if (segment === '' || segment === '.' || segment === '..') throw new InvalidObjectKeyError(key, 'empty, "." or ".." segment');
    if (segment.length > 200) throw new InvalidObjectKeyError(key, 'segment longer than 200 characters');
    if (!SEGMENT.test(segment)) throw new InvalidObjectKeyError(key, 'only letters, digits and . _ = + @ - are allowed');
  }
};

export const assertTtlSeconds = (ttlSeconds: number): void => {
  // S3 caps SigV4 presigned URLs at 7 days; the local adapter keeps the same bound.
  if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > 604_800) {
    throw new RangeError(`ttlSeconds must be an integer in 1..604800, got ${ttlSeconds}`);
  }
};

/** the key as a URL path: each segment escaped, the slashes kept */
export const encodeKeyPath = (key: string): string => key.split('/').map(encodeURIComponent).join('/');
