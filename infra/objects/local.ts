import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { access, constants, copyFile, mkdir, open, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Clock } from '../runtime/clock';
import { systemClock } from '../runtime/clock';
import { LOCAL_OBJECTS_PATH, LOCAL_POST_PATH, signLocalPost, signLocalRequest } from './local-signature';
import {
  assertObjectKey,
  assertPrefix,
  assertRange,
  assertTtlSeconds,
  encodeKeyPath,
  ObjectNotFoundError,
  type ObjectHead,
  type ObjectStore,
} from './port';

export interface LocalObjectStoreOptions {
  /** the platform's data folder; objects live in <dataDir>/objects */
  dataDir: string;
  /** where the HTTP server is reached from outside, e.g. http://localhost:8080 */
  publicBaseUrl: string;
  /** HMAC secret for presigned URLs */
  signingSecret: string | Buffer;
  clock?: Clock;
}

interface StoredMeta {
  contentType: string;
  size: number;
  etag: string;
  lastModified: string;
}

/**
 * `npm start`: one file per object under <dataDir>/objects, laid out like the key, so the folder
 * can be browsed. Each object is two files, `<key>~data` and `<key>~meta`; keys cannot contain '~',
 * so "a" and "a/b" can both exist (S3 allows that, a plain file tree would not).
 *
 * Writes go to a temporary file first and are renamed into place, so a reader sees the old object
 * or the new one, never half of one.
 */
export const createLocalObjectStore = (options: LocalObjectStoreOptions): ObjectStore => {
  const root = resolve(options.dataDir, 'objects');
  // Staging files end in '~tmp', a name no key maps to, so even a key under '.staging/' cannot meet one.
  const staging = join(root, '.staging');
  const clock = options.clock ?? systemClock;

  const pathOf = (key: string, part: 'data' | 'meta') => {
    assertObjectKey(key);
    const path = resolve(root, `${key}~${part}`);
    // assertObjectKey already rules out '..'; this second wall costs nothing.
    if (!path.startsWith(root + sep)) throw new Error(`object path escapes the store: ${key}`);
    return path;
  };
  const stagingPath = async () => {
    await mkdir(staging, { recursive: true });
    return join(staging, `${randomUUID()}~tmp`);
  };
  const readMeta = async (key: string): Promise<StoredMeta | null> => {
    try {
      return JSON.parse(await readFile(pathOf(key, 'meta'), 'utf8')) as StoredMeta;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  };
  const commit = async (key: string, dataTmp: string, meta: StoredMeta) => {
    const metaTmp = await stagingPath();
    await writeFile(metaTmp, JSON.stringify(meta));
    await mkdir(dirname(pathOf(key, 'data')), { recursive: true });
    await rename(dataTmp, pathOf(key, 'data'));
    await rename(metaTmp, pathOf(key, 'meta'));
  };
  const presign = (method: 'GET' | 'PUT', key: string, ttlSeconds: number, contentType?: string) => {
    assertObjectKey(key);
    assertTtlSeconds(ttlSeconds);
    const expires = Math.floor(clock.now().getTime() / 1000) + ttlSeconds;
    const signature = signLocalRequest(options.signingSecret, { method, key, expires, contentType });
    const url = new URL(`${options.publicBaseUrl.replace(/\/+$/, '')}${LOCAL_OBJECTS_PATH}${encodeKeyPath(key)}`);
    url.searchParams.set('expires', String(expires));
    if (contentType !== undefined) url.searchParams.set('contentType', contentType);
    url.searchParams.set('signature', signature);
    return url.toString();
  };

  /** every key under a folder of the store, found from its `~meta` files */
  const keysUnder = async (dir: string, base: string): Promise<string[]> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT' || error.code === 'ENOTDIR') return [];
      throw error;
    });
    const keys: string[] = [];
    for (const entry of entries) {
      if (dir === root && entry.name === '.staging') continue; // the store's own temporary files
      if (entry.isDirectory()) keys.push(...(await keysUnder(join(dir, entry.name), `${base}${entry.name}/`)));
      else if (entry.name.endsWith('~meta')) keys.push(`${base}${entry.name.slice(0, -'~meta'.length)}`);
    }
    return keys;
  };

  const store: ObjectStore = {
    kind: 'local',
    async put(key, body, { contentType }) {
      assertObjectKey(key); // before consuming the body
      // The body is read only once the staging file is open: an error it emits meanwhile (a
      // refusal of its producer, a client gone) must find a listener, or it ends the process.
      // The error is not lost: the stream keeps it and the pipeline below rejects with it.
      if (!Buffer.isBuffer(body)) body.on('error', () => undefined);
      const tmp = await stagingPath();
      const hash = createHash('md5'); // S3's ETag of a single-part object is the MD5 of its bytes
      let size = 0;
      const measure = new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          hash.update(chunk);
          size += chunk.length;
          callback(null, chunk);
        },
      });
      try {
        await pipeline(Buffer.isBuffer(body) ? Readable.from([body]) : body, measure, createWriteStream(tmp));
        await commit(key, tmp, {
          contentType,
          size,
          etag: `"${hash.digest('hex')}"`,
          lastModified: clock.now().toISOString(),
        });
      } catch (error) {
        await rm(tmp, { force: true });
        throw error;
      }
    },
    async get(key, getOptions) {
      const path = pathOf(key, 'data');
      const range = getOptions?.range;
      assertRange(range);
      try {
        // Opened before returning, so a missing object rejects here rather than in the middle of a stream.
        const handle = await open(path, 'r');
        return handle.createReadStream(range ? { start: range.start, end: range.end } : {});
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new ObjectNotFoundError(key);
        throw error;
      }
    },
    async head(key): Promise<ObjectHead | null> {
      const meta = await readMeta(key);
      return (
        meta && {
          key,
          size: meta.size,
          contentType: meta.contentType,
          etag: meta.etag,
          lastModified: new Date(meta.lastModified),
        }
      );
    },
    async delete(key) {
      await rm(pathOf(key, 'meta'), { force: true });
      await rm(pathOf(key, 'data'), { force: true });
    },
    async copy(fromKey, toKey) {
      const meta = await readMeta(fromKey);
      if (!meta) throw new ObjectNotFoundError(fromKey);
      const tmp = await stagingPath();
      try {
        await copyFile(pathOf(fromKey, 'data'), tmp);
        await commit(toKey, tmp, { ...meta, lastModified: clock.now().toISOString() });
      } catch (error) {
        await rm(tmp, { force: true });
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new ObjectNotFoundError(fromKey);
        throw error;
      }
    },
    async move(fromKey, toKey) {
      await store.copy(fromKey, toKey);
      await store.delete(fromKey);
    },
    async list(prefix, listOptions = {}) {
      assertPrefix(prefix);
      // walk only the folder the prefix names completely
      const folder = prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/') + 1) : '';
      const keys = (await keysUnder(folder ? resolve(root, folder) : root, folder))
        .filter((k) => k.startsWith(prefix) && (listOptions.startAfter === undefined || k > listOptions.startAfter))
        .sort();
      const limit = listOptions.limit ?? 1000;
      const objects: { key: string; size: number; lastModified: Date }[] = [];
      for (const key of keys.slice(0, limit)) {
        const head = await store.head(key);
        if (head) objects.push({ key, size: head.size, lastModified: head.lastModified });
      }
      return { objects, more: keys.length > limit };
    },
    presignGet: async (key, ttlSeconds) => presign('GET', key, ttlSeconds),
    presignPut: async (key, ttlSeconds, contentType) => presign('PUT', key, ttlSeconds, contentType),
    async presignPost(key, postOptions) {
      assertObjectKey(key);
      assertTtlSeconds(postOptions.ttlSeconds);
      const expiresAt = new Date(clock.now().getTime() + postOptions.ttlSeconds * 1000);
      const policy = {
        key,
        contentType: postOptions.contentType,
        expires: Math.floor(expiresAt.getTime() / 1000),
        minBytes: postOptions.minBytes,
        maxBytes: postOptions.maxBytes,
      };
      return {
        url: `${options.publicBaseUrl.replace(/\/+$/, '')}${LOCAL_POST_PATH}`,
        expiresAt,
        fields: {
          key,
          'Content-Type': policy.contentType,
          expires: String(policy.expires),
          min: String(policy.minBytes),
          max: String(policy.maxBytes),
          signature: signLocalPost(options.signingSecret, policy),
        },
      };
    },
    async ensureBucket() {
      await mkdir(root, { recursive: true });
    },
    async ping() {
      await mkdir(root, { recursive: true });
      await access(root, constants.R_OK | constants.W_OK);
    },
    async close() {},
  };
  return store;
};
