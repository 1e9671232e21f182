import { z } from 'zod';
import { RawJson } from '../shared/json';
import { BUCKETS, FILE_STATUSES } from './constants';

const MetaOut = z
  .custom<RawJson>((v) => v instanceof RawJson, 'meta must be the JSON text of an object')
  .meta({ type: 'object', additionalProperties: true });

/**
 * The File resource (spec 002): url is a short-lived signed link while the file is available (null
 * otherwise), thumbnails maps each preset made so far to its link. Beyond the spec: meta (the
 * client's object, as sent) and scanStatus (clean, or skipped when FILES_SCAN=skip released it).
 */
export const FileView = z.object({
  id: z.string(),
  originalName: z.string(),
  mimeType: z.string(),
  size: z.number().int(),
  bucket: z.enum(BUCKETS),
  status: z.enum(FILE_STATUSES),
  url: z.string().nullable(),
  thumbnails: z.record(z.string(), z.string()),
  uploadedBy: z.string(),
  tenantId: z.string(),
  createdAt: z.string(),
  deletedAt: z.string().nullable(),
  scanStatus: z.enum(['clean', 'skipped']).nullable(),
  meta: MetaOut.describe('the JSON object sent with the upload (at most 4 KB), exactly as sent'),
});
export type FileView = z.infer<typeof FileView>;

export const JobView = z.object({
  fileId: z.string(),
  jobId: z.string(),
  status: z.enum(['processing', 'completed', 'failed']),
  startedAt: z.string(),
  finishedAt: z.string().nullable(),
  error: z.string().nullable(),
});
export type JobView = z.infer<typeof JobView>;
