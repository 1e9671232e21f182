import type { Bucket, PresetName, PurgeReason } from '../../domain/files/constants';
import { filesErrors } from '../../domain/files/errors';
import type { FileEvent } from '../../domain/files/events';
import type { KnownFile } from '../../domain/files/file';
import type { Operation } from '../../domain/files/operations';
import type { FileView } from '../../domain/files/views';
import { RawJson } from '../../domain/shared/json';
import { auditRecord } from '../../infra/audit';
import type { Loaded, UnitOfWork } from '../../infra/eventstore/unit-of-work';
import type { File } from '../../domain/files/file';
import type { Linker } from '../../domain/files/links';
import { availableFile, countStaged } from './lookups';
import { plannedDimensions } from '../../domain/files/operations';
import { probeImage } from './images';
import { isProcessableImage, readContent } from './thumbnails';
import { FileAggregate, fileStream } from './aggregates';
import type { FilesContext } from './context';
import { removeDoomed } from './doomed';
import { doomObjects, enqueueTask } from './tasks';

const DAY_MS = 86_400_000;

/** the File resource from the aggregate's state (answers of commands) */
export const stateView = (s: KnownFile, tenantId: string, link: Linker): FileView => {
  const available = s.status === 'available';
  return {
    id: s.fileId,
    originalName: s.originalName,
    mimeType: s.mimeType,
    size: s.sizeBytes,
    bucket: s.bucket,
    status: s.status === 'purged' ? 'deleted' : s.status,
    url: available ? link(s.fileId, 'original') : null,
    thumbnails: available
      ? Object.fromEntries(Object.keys(s.thumbnails).map((p) => [p, link(s.fileId, p as PresetName)]))
      : {},
    uploadedBy: s.uploadedBy,
    tenantId,
    createdAt: s.createdAt,
    deletedAt: s.deletedAt,
    scanStatus: s.scanStatus,
    meta: new RawJson(s.meta),
  };
};

const known = (state: File): KnownFile => {
  if (state.status === 'none') throw filesErrors.fileNotFound();
  return state;
};

export const loadFile = (uow: UnitOfWork, fileId: string, lock = false): Promise<Loaded<File>> =>
  uow.load(FileAggregate, fileStream(uow.meta.tenantId, fileId), { lock });

export interface StageInput {
  fileId: string;
  bucket: Bucket;
  originalName: string;
  mimeType: string;
  sizeBytes: number;
  /** the JSON text of an object */
  meta: string;
  uploadedBy: string;
  via: 'upload' | 'presign';
  stagingKey: string;
  /** presign: when the upload form expires */
  uploadBy: Date | null;
}

/**
 * A file enters the staging area (pending_scan) and its scan is queued. The tenant's stagers take
 * turns (an advisory lock) so that the staging limit is exact under concurrent uploads.
 */
export const stageFile = async (uow: UnitOfWork, ctx: FilesContext, input: StageInput): Promise<FileView> => {
  const tenantId = uow.meta.tenantId;
  await uow.tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`files.staging:${tenantId}`]);
  if ((await countStaged(uow.tx, tenantId)) >= ctx.settings.maxStagedPerTenant)
    throw filesErrors.stagingLimitExceeded(ctx.settings.maxStagedPerTenant);
  const now = ctx.kernel.clock.now();
  const file = await loadFile(uow, input.fileId);
  const { state } = uow.decide(FileAggregate, file, {
    type: 'Stage',
    tenantId,
    ...input,
    uploadBy: input.uploadBy?.toISOString() ?? null,
    now: now.toISOString(),
  });
  await enqueueTask(uow.tx, { kind: 'scan', tenantId, fileId: input.fileId, at: now });
  uow.afterCommit(async () => ctx.wake('scan'));
  return stateView(known(state), tenantId, ctx.linker(tenantId));
};

export const softDelete = async (uow: UnitOfWork, ctx: FilesContext, fileId: string): Promise<void> => {
  const now = ctx.kernel.clock.now();
  const purgeAfter = new Date(now.getTime() + ctx.settings.retentionDays * DAY_MS).toISOString();
  uow.decide(FileAggregate, await loadFile(uow, fileId), {
    type: 'Delete',
    tenantId: uow.meta.tenantId,
    now: now.toISOString(),
    purgeAfter,
  });
};

export const restore = async (uow: UnitOfWork, ctx: FilesContext, fileId: string): Promise<FileView> => {
  const now = ctx.kernel.clock.now();
  const restoreFrom = new Date(now.getTime() - ctx.settings.retentionDays * DAY_MS).toISOString();
  const { state } = uow.decide(FileAggregate, await loadFile(uow, fileId), {
    type: 'Restore',
    tenantId: uow.meta.tenantId,
    now: now.toISOString(),
    restoreFrom,
    windowDays: ctx.settings.retentionDays,
  });
  return stateView(known(state), uow.meta.tenantId, ctx.linker(uow.meta.tenantId));
};

/** every object a file has in the store: its content, its thumbnails, and a staging copy if one was left */
export const objectKeysOf = (s: KnownFile): string[] =>
  [s.objectKey, s.stagingKey, ...Object.values(s.thumbnails).map((t) => t.objectKey)].filter(
    (k): k is string => k !== null,
  );

const AUDIT_ACTIONS: Record<PurgeReason, string> = {
  requested: 'files.file.permanent_deleted',
  'trash-expired': 'files.file.permanent_deleted',
  orphaned: 'files.orphan.deleted',
};

/**
 * A file leaves for good (spec 002: available or deleted → permanently deleted, audited, storage
 * recalculated): the event, and its objects doomed in the same transaction; they are removed right
 * after the commit (the maintenance worker retries what the store refused then). Returns whether
 * the file was deleted now.
 */
export const purgeFile = async (
  uow: UnitOfWork,
  ctx: FilesContext,
  fileId: string,
  reason: PurgeReason,
): Promise<boolean> => {
  const { kernel } = ctx;
  const tenantId = uow.meta.tenantId;
  const now = kernel.clock.now();
  const file = await loadFile(uow, fileId, true);
  const before = file.state;
  const { events } = uow.decide(FileAggregate, file, { type: 'Purge', tenantId, reason, now: now.toISOString() });
  const purged = events.find(
    (e): e is Extract<FileEvent, { type: 'files.file.permanent_deleted' }> => e.type === 'files.file.permanent_deleted',
  );
  if (!purged || before.status === 'none') return false;
  const keys = objectKeysOf(before);
  await doomObjects(uow.tx, tenantId, keys, now);
  uow.audit(
    auditRecord(
      {
        action: AUDIT_ACTIONS[reason],
        entityType: 'file',
        entityId: fileId,
        tenantId,
        actorId: uow.meta.actorId ?? 'system',
        traceId: uow.meta.traceId,
        before: {
          status: purged.data.previousStatus,
          sizeBytes: purged.data.sizeBytes,
          bucket: before.bucket,
          originalName: before.originalName,
        },
        after: { status: 'permanently_deleted' },
        meta: { reason },
        timestamp: now.toISOString(),
      },
      kernel.ids.next(),
    ),
  );
  uow.afterCommit(async () => {
    await removeDoomed(ctx, keys);
  });
  return true;
};

/** a processing job is recorded and queued for the workers (the answer is 202 with its id) */
export const startProcessing = async (
  uow: UnitOfWork,
  ctx: FilesContext,
  fileId: string,
  job: { jobId: string; operations: Operation[]; quality: number },
): Promise<{ fileId: string; jobId: string; status: 'processing'; startedAt: string }> => {
  const now = ctx.kernel.clock.now();
  uow.decide(FileAggregate, await loadFile(uow, fileId), { type: 'StartProcessing', ...job, now: now.toISOString() });
  await enqueueTask(uow.tx, { kind: 'process', tenantId: uow.meta.tenantId, fileId, jobId: job.jobId, at: now });
  uow.afterCommit(async () => ctx.wake('process'));
  return { fileId, jobId: job.jobId, status: 'processing', startedAt: now.toISOString() };
};

/**
 * Before a job is accepted: the file is an available picture sharp can process, its header is
 * sound and within the pixel limit (read without decoding: decompression bombs stop here), and the
 * operations fit it. Refusals are 422 processing-failed.
 */
export const checkProcessable = async (
  ctx: FilesContext,
  tenantId: string,
  fileId: string,
  operations: Operation[],
): Promise<void> => {
  const row = await availableFile(ctx.kernel.db, tenantId, fileId);
  if (!isProcessableImage(row.mimeType))
    throw filesErrors.processingFailed(
      `a ${row.mimeType} file cannot be processed; images only (JPEG, PNG, WebP, GIF, AVIF, TIFF)`,
    );
  const { maxPixels, processingTimeoutMs } = ctx.settings;
  const size = await probeImage(await readContent(ctx, row.objectKey), { maxPixels, timeoutMs: processingTimeoutMs });
  const plan = plannedDimensions(operations, size, maxPixels);
  if (!plan.ok) throw filesErrors.processingFailed(plan.reason);
};
