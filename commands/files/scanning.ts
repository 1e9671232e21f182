import { fileTypeFromBuffer } from 'file-type';
import { pipeline, Transform } from 'node:stream';
import { AUTOMATIC_PRESETS, type RejectionReason } from '../../domain/files/constants';
import type { KnownFile } from '../../domain/files/file';
import { EncryptionInspector } from '../../domain/files/inspect';
import { limitFor, resolveMimeType } from '../../domain/files/media';
import { auditRecord } from '../../infra/audit';
import { systemMeta } from '../../infra/kernel';
import { backoffMs } from '../../infra/queue';
import type { ScanVerdict } from '../../infra/scan';
import { FileAggregate, fileStream } from './aggregates';
import type { FilesContext } from './context';
import { contentKey } from './keys';
import { notifyInfected } from './notices';
import { peek } from './uploads';
import type { Task } from './tasks';
import { finishTask, postponeTask } from './tasks';
import { isProcessableImage, makeThumbnail, readContent } from './thumbnails';

/** what became of one scan task */
export type ScanOutcome = 'released' | 'rejected' | 'waiting' | 'scanner-down' | 'done';

const loadState = async (ctx: FilesContext, tenantId: string, fileId: string) =>
  ctx.kernel.commands.run(
    systemMeta(tenantId),
    async (uow) => (await uow.load(FileAggregate, fileStream(tenantId, fileId))).state,
  );

/** the delay before asking a scanner that is down again: 2, 4, 8 … s, at most maxRetryDelayMs */
/** 2 s, 4 s, 8 s … up to the configured maximum (and never past 2^16 s) */
const backoff = (ctx: FilesContext, attempts: number): number =>
  backoffMs({ baseMs: 2000, capMs: Math.min(ctx.settings.maxRetryDelayMs, 1000 * 2 ** 16), jitter: 0 }, attempts);

/**
 * One staged file through its scan (spec 002, File status): a staging copy older than the staging
 * TTL is rejected; a presigned upload whose bytes have not arrived waits until its form expired
 * (plus a grace period); the bytes stream from the store through an encryption inspector to clamd;
 * infected, unscannable (over clamd's limit), encrypted or oversized content is rejected and removed
 * from staging; clean content is copied to {tenantId}/<bucket>/, released (files.file.uploaded),
 * and images get their automatic thumbnails. A scanner that is down leaves the file pending_scan
 * and the task is retried later: nothing is released unscanned, unless FILES_SCAN=skip (development)
 * releases it with scan status skipped.
 */
export const scanStaged = async (ctx: FilesContext, task: Task): Promise<ScanOutcome> => {
  const { kernel, settings, objects } = ctx;
  const state = await loadState(ctx, task.tenantId, task.fileId);
  if (state.status !== 'pending_scan') {
    // released or rejected already (an earlier attempt, another worker): only its staging copy may be left
    if (state.status !== 'none') await objects.delete(state.stagingKey);
    await finishTask(kernel.db, task);
    return 'done';
  }
  const now = kernel.clock.now();
  if (now.getTime() - Date.parse(state.createdAt) > settings.stagingTtlMs)
    return reject(ctx, task, state, 'staging-expired', null);
  const head = await objects.head(state.stagingKey);
  if (!head) {
    const waitUntil = state.uploadBy ? Date.parse(state.uploadBy) + settings.presignGraceMs : 0;
    if (now.getTime() < waitUntil) {
      await postponeTask(
        kernel.db,
        task,
        new Date(now.getTime() + backoff(ctx, task.attempts)),
        'the upload has not arrived yet',
      );
      return 'waiting';
    }
    return reject(ctx, task, state, 'upload-missing', null);
  }
  if (settings.scan === 'skip')
    return release(ctx, task, state, await typeOf(ctx, state, head.size), head.size, 'skipped');
  if (!ctx.scanner) {
    await postponeTask(
      kernel.db,
      task,
      new Date(now.getTime() + settings.maxRetryDelayMs),
      'no scanner is configured (CLAMD_HOST)',
    );
    return 'scanner-down';
  }

  const inspector = new EncryptionInspector();
  const inspected = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      inspector.push(chunk);
      done(null, chunk);
    },
  });
  let verdict: ScanVerdict;
  try {
    const body = await objects.get(state.stagingKey);
    // a failure on either side ends both (the store's stream is released when the scan stops
    // early); the scanner sees the error through the stream it reads
    verdict = await ctx.scanner.scan(pipeline(body, inspected, () => undefined));
  } catch (error) {
    kernel.logger.warn(
      { err: error, fileId: task.fileId, tenantId: task.tenantId, attempts: task.attempts },
      'scan failed; the file stays pending_scan and is retried',
    );
    await postponeTask(
      kernel.db,
      task,
      new Date(now.getTime() + backoff(ctx, task.attempts)),
      error instanceof Error ? error.message : String(error),
    );
    return 'scanner-down';
  }
  if ('signature' in verdict) return reject(ctx, task, state, 'infected', verdict.signature);
  if ('unscannable' in verdict) return reject(ctx, task, state, 'unscannable', null);
  if (inspector.found) return reject(ctx, task, state, 'encrypted', null);
  const mimeType = await typeOf(ctx, state, head.size);
  if (head.size > limitFor(mimeType, settings.limits)) return reject(ctx, task, state, 'too-large', null, head.size);
  return release(ctx, task, state, mimeType, head.size, 'clean');
};

/**
 * The type of the content: a streamed upload's was decided from its bytes when it arrived; a
 * presigned upload's bytes were never seen by the platform, so its first bytes are read now.
 */
const typeOf = async (ctx: FilesContext, state: KnownFile, size: number): Promise<string> => {
  if (state.via === 'upload') return state.mimeType;
  if (size === 0) return resolveMimeType(null, state.mimeType, Buffer.alloc(0));
  const body = await ctx.objects.get(state.stagingKey, { range: { start: 0, end: Math.min(4099, size - 1) } });
  const { sample, all } = await peek(body, 4100);
  all.destroy();
  body.destroy(); // the rest is not read: its handle (a file, a connection) is released now
  return resolveMimeType((await fileTypeFromBuffer(sample))?.mime ?? null, state.mimeType, sample);
};

const release = async (
  ctx: FilesContext,
  task: Task,
  state: KnownFile,
  mimeType: string,
  sizeBytes: number,
  scanStatus: 'clean' | 'skipped',
): Promise<ScanOutcome> => {
  const { kernel, objects } = ctx;
  const key = contentKey(task.tenantId, state.bucket, task.fileId, 1);
  // copied before the release commits, deleted from staging after: a crash in between scans again
  await objects.copy(state.stagingKey, key);
  const released = await kernel.commands.run(systemMeta(task.tenantId), async (uow) => {
    const file = await uow.load(FileAggregate, fileStream(task.tenantId, task.fileId), { lock: true });
    return (
      uow.decide(FileAggregate, file, {
        type: 'Release',
        tenantId: task.tenantId,
        objectKey: key,
        mimeType,
        sizeBytes,
        scanStatus,
        now: kernel.clock.now().toISOString(),
      }).events.length > 0
    );
  });
  if (!released) await objects.delete(key); // rejected meanwhile (staging TTL): the copy belongs to nothing
  await objects.delete(state.stagingKey);
  await finishTask(kernel.db, task);
  if (released && isProcessableImage(mimeType))
    await automaticThumbnails(ctx, {
      tenantId: task.tenantId,
      fileId: task.fileId,
      bucket: state.bucket,
      objectKey: key,
      contentVersion: 1,
      mimeType,
    });
  return released ? 'released' : 'done';
};

/** icon_32 and card_300 on release; a picture that cannot be made into one keeps none (on demand answers 422) */
export const automaticThumbnails = async (
  ctx: FilesContext,
  file: Parameters<typeof makeThumbnail>[1],
): Promise<void> => {
  try {
    const source = await readContent(ctx, file.objectKey);
    for (const preset of AUTOMATIC_PRESETS) await makeThumbnail(ctx, file, preset, source);
  } catch (error) {
    ctx.kernel.logger.info(
      { err: error, fileId: file.fileId, tenantId: file.tenantId },
      'no automatic thumbnails for this image',
    );
  }
};

const reject = async (
  ctx: FilesContext,
  task: Task,
  state: KnownFile,
  reason: RejectionReason,
  signature: string | null,
  sizeBytes: number | null = null,
): Promise<ScanOutcome> => {
  const { kernel, objects } = ctx;
  const now = kernel.clock.now().toISOString();
  const rejected = await kernel.commands.run(systemMeta(task.tenantId), async (uow) => {
    const file = await uow.load(FileAggregate, fileStream(task.tenantId, task.fileId), { lock: true });
    const { events } = uow.decide(FileAggregate, file, {
      type: 'Reject',
      tenantId: task.tenantId,
      reason,
      signature,
      sizeBytes,
      now,
    });
    if (events.length === 0) return false;
    uow.audit(
      auditRecord(
        {
          action: 'files.file.rejected',
          entityType: 'file',
          entityId: task.fileId,
          tenantId: task.tenantId,
          actorId: 'system',
          before: { status: 'pending_scan' },
          after: { status: 'rejected', reason, ...(signature ? { signature } : {}) },
          meta: {
            bucket: state.bucket,
            originalName: state.originalName,
            uploadedBy: state.uploadedBy,
            sizeBytes: sizeBytes ?? state.sizeBytes,
          },
          timestamp: now,
        },
        kernel.ids.next(),
      ),
    );
    return true;
  });
  await objects.delete(state.stagingKey);
  await finishTask(kernel.db, task);
  if (!rejected) return 'done';
  if (reason === 'infected') {
    await notifyInfected(kernel, ctx.owners, {
      tenantId: task.tenantId,
      fileId: task.fileId,
      originalName: state.originalName,
      signature: signature ?? 'malware',
      uploadedBy: state.uploadedBy,
      at: now,
    }).catch((error: unknown) =>
      kernel.logger.error(
        { err: error, fileId: task.fileId, tenantId: task.tenantId },
        'the tenant admins could not be told about an infected file',
      ),
    );
  }
  return 'rejected';
};
