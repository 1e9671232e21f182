import busboy from 'busboy';
import { fileTypeFromBuffer } from 'file-type';
import type { IncomingHttpHeaders } from 'node:http';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { commonErrors, isDomainError } from '../../domain/shared/errors';
import { filesErrors } from '../../domain/files/errors';
import { checkUploadFields } from '../../domain/files/fields';
import { kindOf, limitFor, resolveMimeType, type SizeLimits } from '../../domain/files/media';
import type { ObjectStore } from '../../infra/objects';

/** bytes file-type reads to recognise a format (its default sample) */
const SAMPLE_BYTES = 4100;

/**
 * Counts the bytes of an upload as they pass and refuses the stream the moment it goes beyond its
 * limit (413 payload-too-large, measured while streaming, never after buffering). The limit starts at the larger of the two and tightens once the
 * content's type says it is an image.
 */
export class SizeGuard extends Transform {
  bytes = 0;

  constructor(
    private limit: number,
    private kind: 'image' | 'document',
    private readonly limits: SizeLimits,
  ) {
    super();
  }

  /** the type is known: its kind's limit applies from now on, to the bytes already counted too */
  settle(mimeType: string): void {
    this.kind = kindOf(mimeType);
    this.limit = limitFor(mimeType, this.limits);
    if (this.bytes > this.limit) this.destroy(filesErrors.payloadTooLarge(this.kind, this.limit));
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limit) return done(filesErrors.payloadTooLarge(this.kind, this.limit));
    done(null, chunk);
  }
}

export interface Stored {
  sizeBytes: number;
  mimeType: string;
}

/**
 * The first `bytes` of a stream (fewer when it is shorter), and a stream of all of it: what was
 * read to look at, then the rest as it comes, at the consumer's pace.
 */
export const peek = async (source: Readable, bytes: number): Promise<{ sample: Buffer; all: Readable }> => {
  const iterator = (source as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  const head: Buffer[] = [];
  let length = 0;
  let ended = false;
  while (length < bytes) {
    const next = await iterator.next();
    if (next.done) {
      ended = true;
      break;
    }
    head.push(next.value);
    length += next.value.length;
  }
  async function* replay() {
    yield* head;
    if (ended) return;
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value;
  }
  return { sample: Buffer.concat(head).subarray(0, bytes), all: Readable.from(replay(), { objectMode: false }) };
};

/** one file stream into the store under key: typed by its magic bytes, bounded while it flows */
export const storeStream = async (
  objects: ObjectStore,
  key: string,
  source: Readable,
  declaredMime: string | null,
  limits: SizeLimits,
): Promise<Stored> => {
  const largest = Math.max(limits.imageBytes, limits.documentBytes);
  const guard = new SizeGuard(largest, limits.documentBytes >= limits.imageBytes ? 'document' : 'image', limits);
  source.on('error', (error) => guard.destroy(error));
  const { sample, all } = await peek(source.pipe(guard), SAMPLE_BYTES);
  const detected = sample.length ? await fileTypeFromBuffer(sample) : undefined;
  const mimeType = resolveMimeType(detected?.mime ?? null, declaredMime, sample);
  guard.settle(mimeType);
  await objects.put(key, all, { contentType: mimeType });
  return { sizeBytes: guard.bytes, mimeType };
};

export interface ReceivedUpload extends Stored {
  /** the text fields as sent (checked by domain/files/fields.ts) */
  fields: Record<string, string>;
}

/**
 * Reads a multipart/form-data upload as it arrives: the text fields, then the part named `file`
 * streamed into the store under stagingKey (fields sent before it are checked before its bytes are
 * stored). Never holds the file in memory: the store consumes it at the pace it arrives.
 * Rejects with the problem to answer; what was stored of a refused upload is removed.
 */
export const receiveMultipart = (
  objects: ObjectStore,
  request: { headers: IncomingHttpHeaders; body: Readable },
  stagingKey: string,
  limits: SizeLimits,
): Promise<ReceivedUpload> =>
  new Promise<ReceivedUpload>((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: request.headers,
        limits: { files: 1, fields: 10, parts: 12, fieldSize: 8192, fieldNameSize: 100 },
        fileHwm: 64 * 1024,
      });
    } catch {
      reject(
        commonErrors.validation([
          {
            field: 'body',
            message: 'a multipart/form-data body with a boundary is required',
            code: 'INVALID_MULTIPART',
          },
        ]),
      );
      return;
    }
    const fields: Record<string, string> = {};
    let stored: Promise<Stored> | null = null;
    let settled = false;
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      request.body.unpipe(parser);
      parser.removeAllListeners('close');
      // the refused upload's bytes, if any reached the store
      void (stored ?? Promise.resolve())
        .catch(() => undefined)
        .then(() => objects.delete(stagingKey))
        .catch(() => undefined);
      reject(
        isDomainError(error)
          ? error
          : commonErrors.validation([
              { field: 'body', message: 'the multipart body is malformed or ended early', code: 'INVALID_MULTIPART' },
            ]),
      );
    };

    parser.on('field', (name, value, info) => {
      if (info.valueTruncated)
        return fail(commonErrors.validation([{ field: name, message: `${name} is too long`, code: 'TOO_LONG' }]));
      fields[name] = value;
    });
    parser.on('file', (name, stream, info) => {
      // busboy destroys a part's stream with an error when the form ends inside it: a part skipped
      // here has a listener too, or that error would end the process (the stored part's is storeStream's)
      stream.on('error', () => undefined);
      if (name !== 'file' || stored) {
        stream.resume(); // only one part named file is read
        return;
      }
      try {
        checkUploadFields(fields, false);
      } catch (error) {
        stream.resume();
        return fail(error);
      }
      stored = storeStream(objects, stagingKey, stream, fields.mimeType ?? info.mimeType ?? null, limits);
      stored.catch(fail);
    });
    parser.on('filesLimit', () => undefined);
    parser.on('partsLimit', () =>
      fail(commonErrors.validation([{ field: 'body', message: 'too many parts', code: 'TOO_MANY_PARTS' }])),
    );
    parser.on('fieldsLimit', () =>
      fail(commonErrors.validation([{ field: 'body', message: 'too many fields', code: 'TOO_MANY_FIELDS' }])),
    );
    parser.on('error', fail);
    parser.on('close', () => {
      if (settled) return;
      if (!stored)
        return fail(
          commonErrors.validation([{ field: 'file', message: 'a part named file is required', code: 'REQUIRED' }]),
        );
      stored.then((result) => {
        if (settled) return;
        try {
          checkUploadFields(fields, true);
        } catch (error) {
          return fail(error);
        }
        settled = true;
        resolve({ ...result, fields });
      }, fail);
    });
    request.body.on('error', fail);
    request.body.pipe(parser);
  });
