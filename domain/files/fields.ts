import { commonErrors, type FieldError } from '../shared/errors';
import { isBucket, META_MAX_BYTES, type Bucket } from './constants';
import { filesErrors } from './errors';
import { originalNameTooLong, safeFileName } from './names';

/** the text fields of an upload (multipart), checked: what POST /files/upload stores beside the bytes */
export interface UploadFields {
  bucket: Bucket;
  /** cleaned (names.ts safeFileName) */
  originalName: string;
  /** the type the client named: used only for text without a signature (media.ts) */
  declaredMime: string | null;
  /** the JSON text of an object, as sent; '{}' when none was sent */
  meta: string;
}

const isObject = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v);

/** the meta field: a JSON object of at most 4 KB of text */
export const metaProblem = (meta: string): FieldError | null => {
  if (Buffer.byteLength(meta, 'utf8') > META_MAX_BYTES)
    return { field: 'meta', message: `meta must be at most ${META_MAX_BYTES} bytes of JSON`, code: 'META_TOO_LARGE' };
  try {
    if (isObject(JSON.parse(meta))) return null;
  } catch {
    // reported below
  }
  return { field: 'meta', message: 'meta must be a JSON object', code: 'INVALID_JSON' };
};

/**
 * Problems of the fields known so far: checked when the file part starts (fields sent before the
 * file refuse the upload before its bytes are stored) and again, complete, at the end.
 */
export const uploadFieldProblems = (fields: Record<string, string>, complete: boolean): FieldError[] => {
  const problems: FieldError[] = [];
  if (fields.bucket === undefined && complete)
    problems.push({ field: 'bucket', message: 'bucket is required', code: 'REQUIRED' });
  if (fields.originalName === undefined && complete)
    problems.push({ field: 'originalName', message: 'originalName is required', code: 'REQUIRED' });
  if (fields.originalName !== undefined && fields.originalName.trim() === '')
    problems.push({ field: 'originalName', message: 'originalName must not be empty', code: 'REQUIRED' });
  if (fields.originalName !== undefined && originalNameTooLong(fields.originalName))
    problems.push({ field: 'originalName', message: 'originalName must be at most 1024 bytes', code: 'TOO_LONG' });
  if (fields.mimeType !== undefined && !/^[\w.+-]+\/[\w.+-]+$/.test(fields.mimeType.split(';')[0]!.trim())) {
    problems.push({
      field: 'mimeType',
      message: 'mimeType must be a media type such as text/csv',
      code: 'INVALID_FORMAT',
    });
  }
  const meta = fields.meta === undefined ? null : metaProblem(fields.meta);
  if (meta) problems.push(meta);
  return problems;
};

/** throws the 400 a client must see first: an unknown bucket has its own suffix */
export const checkUploadFields = (fields: Record<string, string>, complete: boolean): void => {
  if (fields.bucket !== undefined && !isBucket(fields.bucket)) throw filesErrors.bucketInvalid(fields.bucket);
  const problems = uploadFieldProblems(fields, complete);
  if (problems.length) throw commonErrors.validation(problems);
};

export const uploadFields = (fields: Record<string, string>): UploadFields => {
  checkUploadFields(fields, true);
  return {
    bucket: fields.bucket as Bucket,
    originalName: safeFileName(fields.originalName!),
    declaredMime: fields.mimeType ?? null,
    meta: fields.meta ?? '{}',
  };
};
