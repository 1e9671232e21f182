import { z } from 'zod';
import { JsonObject } from '../shared/json';
import { BUCKETS, PRESET_NAMES, REJECTION_REASONS } from './constants';
import { Operation } from './operations';

/**
 * Files events, on platform.files.events (key: the file id). Billing counts storage bytes per
 * tenant from them: files.file.uploaded adds sizeBytes, files.file.processed replaces
 * previousSizeBytes by sizeBytes, files.file.permanent_deleted subtracts sizeBytes; deleted and
 * restored change nothing (a file in the trash is still billed). Thumbnails are not counted.
 */
const Bucket = z.enum(BUCKETS);
const Preset = z.enum(PRESET_NAMES as [string, ...string[]]);
const Size = z.number().int().min(0);
/**
 * meta: the JSON text of the client's object, as sent; on the log it is the object itself
 * (domain/events/platform-events.ts wirePayloadOf), read back as its text (a replay from the log)
 */
export const FileMeta = z
  .union([z.string(), JsonObject])
  .transform((v) => (typeof v === 'string' ? v : JSON.stringify(v)));

export const FileStaged = z.object({
  type: z.literal('files.file.staged'),
  data: z.object({
    fileId: z.string(),
    bucket: Bucket,
    originalName: z.string(),
    mimeType: z.string(),
    sizeBytes: Size,
    meta: FileMeta,
    uploadedBy: z.string(),
    via: z.enum(['upload', 'presign']),
    stagingKey: z.string(),
    createdAt: z.string(),
    /** presign: the upload form's expiry (the file waits for its bytes until then); null for a streamed upload */
    uploadBy: z.string().nullable(),
  }),
});
/** the scan found it clean (or scanning is skipped in development): released to {tenantId}/<bucket>/ */
export const FileUploaded = z.object({
  type: z.literal('files.file.uploaded'),
  data: z.object({
    fileId: z.string(),
    tenantId: z.string(),
    bucket: Bucket,
    mimeType: z.string(),
    sizeBytes: Size,
    objectKey: z.string(),
    scanStatus: z.enum(['clean', 'skipped']),
    uploadedBy: z.string(),
    releasedAt: z.string(),
  }),
});
export const FileRejected = z.object({
  type: z.literal('files.file.rejected'),
  data: z.object({
    fileId: z.string(),
    tenantId: z.string(),
    reason: z.enum(REJECTION_REASONS),
    signature: z.string().nullable(),
    sizeBytes: Size,
    rejectedAt: z.string(),
  }),
});
export const FileDeleted = z.object({
  type: z.literal('files.file.deleted'),
  data: z.object({
    fileId: z.string(),
    tenantId: z.string(),
    sizeBytes: Size,
    deletedAt: z.string(),
    purgeAfter: z.string(),
  }),
});
export const FileRestored = z.object({
  type: z.literal('files.file.restored'),
  data: z.object({ fileId: z.string(), tenantId: z.string(), sizeBytes: Size, restoredAt: z.string() }),
});
export const FilePermanentlyDeleted = z.object({
  type: z.literal('files.file.permanent_deleted'),
  data: z.object({
    fileId: z.string(),
    tenantId: z.string(),
    sizeBytes: Size,
    reason: z.enum(['requested', 'trash-expired', 'orphaned']),
    previousStatus: z.enum(['available', 'deleted']),
    deletedAt: z.string(),
  }),
});
export const ThumbnailCreated = z.object({
  type: z.literal('files.file.thumbnail_created'),
  data: z.object({
    fileId: z.string(),
    preset: Preset,
    objectKey: z.string(),
    mimeType: z.string(),
    width: z.number().int(),
    height: z.number().int(),
    contentVersion: z.number().int(),
    createdAt: z.string(),
  }),
});
export const ProcessingStarted = z.object({
  type: z.literal('files.file.processing_started'),
  data: z.object({
    fileId: z.string(),
    jobId: z.string(),
    operations: z.array(Operation),
    quality: z.number().int(),
    startedAt: z.string(),
  }),
});
export const FileProcessed = z.object({
  type: z.literal('files.file.processed'),
  data: z.object({
    fileId: z.string(),
    tenantId: z.string(),
    jobId: z.string(),
    objectKey: z.string(),
    mimeType: z.string(),
    sizeBytes: Size,
    previousSizeBytes: Size,
    contentVersion: z.number().int(),
    completedAt: z.string(),
  }),
});
export const ProcessingFailed = z.object({
  type: z.literal('files.file.processing_failed'),
  data: z.object({ fileId: z.string(), jobId: z.string(), reason: z.string(), failedAt: z.string() }),
});
/** no reference to it was found (older than FILES_ORPHAN_MIN_AGE_HOURS): deleted for good after the retention unless referenced again */
export const FileOrphaned = z.object({
  type: z.literal('files.file.orphaned'),
  data: z.object({ fileId: z.string(), orphanedAt: z.string(), purgeAfter: z.string() }),
});
export const OrphanCleared = z.object({
  type: z.literal('files.file.orphan_cleared'),
  data: z.object({ fileId: z.string(), clearedAt: z.string() }),
});

export const FileEvent = z.discriminatedUnion('type', [
  FileStaged,
  FileUploaded,
  FileRejected,
  FileDeleted,
  FileRestored,
  FilePermanentlyDeleted,
  ThumbnailCreated,
  ProcessingStarted,
  FileProcessed,
  ProcessingFailed,
  FileOrphaned,
  OrphanCleared,
]);
export type FileEvent = z.infer<typeof FileEvent>;
export type FileEventType = FileEvent['type'];
export const fileEventTypes = FileEvent.options.map<FileEventType>((o) => o.shape.type.value);
