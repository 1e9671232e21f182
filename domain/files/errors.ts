import { defineErrors } from '../shared/errors';

/** The files catalog (spec 002, Errors/Files). */
export const filesErrors = defineErrors({
  fileNotFound: () => ({
    status: 404,
    suffix: 'file-not-found',
    title: 'File not found',
    detail: 'The file does not exist or is not available yet (still being scanned).',
  }),
  fileRejected: (reason: string) => ({
    status: 422,
    suffix: 'file-rejected',
    title: 'File rejected',
    detail: `The file was rejected (${reason}) and cannot be served.`,
    extensions: { reason },
  }),
  fileNotDeleted: () => ({
    status: 400,
    suffix: 'file-not-deleted',
    title: 'File not deleted',
    detail: 'Only a file in the trash can be restored.',
  }),
  fileRestoreExpired: (days: number) => ({
    status: 410,
    suffix: 'file-restore-expired',
    title: 'Restore window passed',
    detail: `A deleted file can be restored within ${days} days; this one was deleted earlier.`,
  }),
  stagingLimitExceeded: (max: number) => ({
    status: 503,
    suffix: 'staging-limit-exceeded',
    title: 'Too many files waiting for their scan',
    detail: `The tenant has ${max} files waiting for their virus scan; retry once some are released.`,
    extensions: { maxStaged: max, retryAfter: 30 },
    headers: { 'Retry-After': '30' },
  }),
  payloadTooLarge: (kind: 'image' | 'document', maxBytes: number) => ({
    status: 413,
    suffix: 'payload-too-large',
    title: 'Payload too large',
    detail: `The ${kind} exceeds the limit of ${maxBytes} bytes (${maxBytes / 1_048_576} MB).`,
    extensions: { kind, maxBytes },
  }),
  bucketInvalid: (bucket: string) => ({
    status: 400,
    suffix: 'bucket-invalid',
    title: 'Unknown bucket',
    detail: `There is no bucket ${JSON.stringify(bucket)}; use avatars, assets, documents, exports or modules.`,
    errors: [
      {
        field: 'bucket',
        message: 'must be one of avatars, assets, documents, exports, modules',
        code: 'BUCKET_INVALID',
      },
    ],
  }),
  processingFailed: (detail: string) => ({
    status: 422,
    suffix: 'processing-failed',
    title: 'Processing failed',
    detail,
  }),
  presetNotFound: (preset: string) => ({
    status: 404,
    suffix: 'preset-not-found',
    title: 'Preset not found',
    detail: `There is no thumbnail preset ${JSON.stringify(preset)}; use icon_32, avatar_64, card_300, preview_600 or full_1200.`,
  }),
  jobNotFound: () => ({
    status: 404,
    suffix: 'not-found',
    title: 'Not found',
    detail: 'The processing job does not exist.',
  }),
  linkInvalid: (why: 'expired' | 'bad-signature') => ({
    status: 403,
    suffix: 'forbidden',
    title: 'Link not valid',
    detail: why === 'expired' ? 'The signed link has expired; ask for a new one.' : 'The signed link is not valid.',
  }),
  rangeNotSatisfiable: (size: number) => ({
    status: 416,
    suffix: 'range-not-satisfiable',
    title: 'Range not satisfiable',
    detail: `The range starts beyond the end of the ${size} bytes.`,
    headers: { 'Content-Range': `bytes */${size}` },
  }),
  multipartRequired: (contentType: string | undefined) => ({
    status: 415,
    suffix: 'unsupported-media-type',
    title: 'Unsupported media type',
    detail: `Content-Type ${contentType === undefined ? '(none)' : JSON.stringify(contentType)} is not accepted; send multipart/form-data.`,
  }),
});
