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

/** bytes start..end of an object, both included (an HTTP Range, resolved against the object's size) */
export interface ByteRange {
  start: number;
  end: number;
}

/** what a browser-style POST upload must satisfy; the store itself refuses any other upload */
export interface PresignPostOptions {
  ttlSeconds: number;
  /** the exact Content-Type the form must declare */
  contentType: string;
  /** the body's size must lie within minBytes..maxBytes (S3's content-length-range) */
  minBytes: number;
  maxBytes: number;
}

/** a form upload: POST multipart/form-data to url with these fields first, then the file as field `file` */
export interface PresignedPost {
  url: string;
  fields: Record<string, string>;
  expiresAt: Date;
}

export interface ObjectPage {
  /** what a listing tells of each object (S3 lists no content type) */
  objects: { key: string; size: number; lastModified: Date }[];
  /** more objects follow the last one: ask again with startAfter = its key */
  more: boolean;
}

export interface ObjectStore {
  readonly kind: 'local' | 's3';
  /** stores or replaces the object; a stream is consumed to its end (never held whole in memory) */
  put(key: string, body: Buffer | Readable, options: { contentType: string }): Promise<void>;
  /** the object's bytes, or only those of a range; rejects with ObjectNotFoundError when there is none */
  get(key: string, options?: { range?: ByteRange }): Promise<Readable>;
  /** metadata, or null when there is no such object */
  head(key: string): Promise<ObjectHead | null>;
  /** removes the object; removing a missing one is not an error */
  delete(key: string): Promise<void>;
  /** rejects with ObjectNotFoundError when the source does not exist */
  copy(fromKey: string, toKey: string): Promise<void>;
  /** copy, then delete the source; the target is complete before the source goes */
  move(fromKey: string, toKey: string): Promise<void>;
  /** objects whose key starts with prefix, in key order, after startAfter, at most limit (default 1000) */
  list(prefix: string, options?: { startAfter?: string; limit?: number }): Promise<ObjectPage>;
  /** a URL anyone holding it can GET the object with, until ttlSeconds pass */
  presignGet(key: string, ttlSeconds: number): Promise<string>;
  /** a URL to PUT the object with, with exactly this Content-Type, until ttlSeconds pass */
  presignPut(key: string, ttlSeconds: number, contentType: string): Promise<string>;
  /** a form upload to this key whose type, size and expiry the store enforces (S3 POST policy) */
  presignPost(key: string, options: PresignPostOptions): Promise<PresignedPost>;
  /** creates the bucket (S3_BUCKET) or folder when it does not exist yet */
  ensureBucket(): Promise<void>;
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
  constructor(
    readonly key: string,
    reason: string,
  ) {
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
    if (segment === '' || segment === '.' || segment === '..')
      throw new InvalidObjectKeyError(key, 'empty, "." or ".." segment');
    if (segment.length > 200) throw new InvalidObjectKeyError(key, 'segment longer than 200 characters');
    if (!SEGMENT.test(segment))
      throw new InvalidObjectKeyError(key, 'only letters, digits and . _ = + @ - are allowed');
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

export const assertRange = (range: ByteRange | undefined): void => {
  if (
    range &&
    !(
      Number.isSafeInteger(range.start) &&
      Number.isSafeInteger(range.end) &&
      range.start >= 0 &&
      range.end >= range.start
    )
  ) {
    throw new RangeError(`a byte range is start..end with 0 <= start <= end, got ${range.start}..${range.end}`);
  }
};

/** the key prefix as given to list: '' (everything) or segments ending anywhere; no '..' climbing */
export const assertPrefix = (prefix: string): void => {
  if (
    prefix !== '' &&
    (prefix.startsWith('/') || prefix.split('/').some((s) => s === '.' || s === '..') || prefix.includes('~'))
  ) {
    throw new InvalidObjectKeyError(prefix, 'a prefix is the start of a key');
  }
};
