import { filesErrors } from '../../domain/files/errors';
import { Operations } from '../../domain/files/operations';
import { isDomainError } from '../../domain/shared/errors';
import { systemMeta } from '../../infra/kernel';
import type { Backoff } from '../../infra/queue';
import { afterFailure } from '../../infra/queue';
import { FileAggregate, fileStream } from './aggregates';
import type { FilesContext } from './context';
import { removeDoomed } from './doomed';
import { objectKeysOf } from './handlers';
import { applyOperations, ImageTimeout } from './images';
import { contentKey } from './keys';
import { automaticThumbnails } from './scanning';
import type { Task } from './tasks';
import { doomObjects, finishTask, postponeTask } from './tasks';
import { isProcessableImage, readContent } from './thumbnails';

const MAX_ATTEMPTS = 5;
/** 5 s after the first failure, 10 s after the second … */
const RETRY: Backoff = { steps: [5000, 10_000, 15_000, 20_000] };

const jobOf = async (ctx: FilesContext, task: Task) => {
  const { rows } = await ctx.kernel.db.query<{ operations: unknown; quality: number }>(
    'SELECT operations, quality FROM rm.files_jobs WHERE tenant_id = $1 AND id = $2 AND file_id = $3',
    [task.tenantId, task.jobId, task.fileId],
  );
  return rows[0] ? { operations: Operations.parse(rows[0].operations), quality: rows[0].quality } : null;
};

const fail = async (ctx: FilesContext, task: Task, reason: string): Promise<void> => {
  await ctx.kernel.commands.run(systemMeta(task.tenantId), async (uow) => {
    const file = await uow.load(FileAggregate, fileStream(task.tenantId, task.fileId), { lock: true });
    uow.decide(FileAggregate, file, {
      type: 'FailProcessing',
      jobId: task.jobId,
      reason,
      now: ctx.kernel.clock.now().toISOString(),
    });
  });
  await finishTask(ctx.kernel.db, task);
};

/**
 * One processing job (POST /files/:id/process): the operations applied to the current content
 * within FILES_IMAGE_PROCESSING_TIMEOUT_SEC; the result is the next content version and the
 * previous content and its thumbnails go. On timeout or an image that cannot be processed the job
 * fails and the original stays as it was; a store that is down is retried a few times.
 */
export const runProcessingJob = async (
  ctx: FilesContext,
  task: Task,
): Promise<'completed' | 'failed' | 'retry' | 'done'> => {
  const { kernel, settings, objects } = ctx;
  const state = await kernel.commands.run(
    systemMeta(task.tenantId),
    async (uow) => (await uow.load(FileAggregate, fileStream(task.tenantId, task.fileId))).state,
  );
  const job = await jobOf(ctx, task);
  if (state.status === 'none' || state.jobs[task.jobId]?.status !== 'processing' || !job) {
    await finishTask(kernel.db, task);
    return 'done';
  }
  if (state.status !== 'available' || !state.objectKey || !isProcessableImage(state.mimeType)) {
    await fail(
      ctx,
      task,
      `the file is ${state.status === 'available' ? 'not an image that can be processed' : state.status}`,
    );
    return 'failed';
  }
  const nextKey = contentKey(task.tenantId, state.bucket, task.fileId, state.contentVersion + 1);
  try {
    const result = await applyOperations(
      await readContent(ctx, state.objectKey),
      state.mimeType,
      job.operations,
      job.quality,
      { maxPixels: settings.maxPixels, timeoutMs: settings.processingTimeoutMs },
    );
    await objects.put(nextKey, result.data, { contentType: result.mimeType });
    const now = kernel.clock.now();
    const outcome = await kernel.commands.run(systemMeta(task.tenantId), async (uow) => {
      const file = await uow.load(FileAggregate, fileStream(task.tenantId, task.fileId), { lock: true });
      const before = file.state;
      const { events, state: after } = uow.decide(FileAggregate, file, {
        type: 'CompleteProcessing',
        tenantId: task.tenantId,
        jobId: task.jobId,
        objectKey: nextKey,
        mimeType: result.mimeType,
        sizeBytes: result.data.length,
        now: now.toISOString(),
      });
      const processed = events.some((e) => e.type === 'files.file.processed');
      // the previous content and its thumbnails are of no use once the next version is recorded
      const doomed =
        processed && before.status !== 'none' ? objectKeysOf(before).filter((k) => k !== before.stagingKey) : [];
      await doomObjects(uow.tx, task.tenantId, doomed, now);
      return { processed, doomed, after };
    });
    await finishTask(kernel.db, task);
    if (!outcome.processed) {
      await objects.delete(nextKey);
      return 'failed';
    }
    await removeDoomed(ctx, outcome.doomed);
    if (outcome.after.status === 'available') {
      await automaticThumbnails(ctx, {
        tenantId: task.tenantId,
        fileId: task.fileId,
        bucket: state.bucket,
        objectKey: nextKey,
        contentVersion: outcome.after.contentVersion,
        mimeType: result.mimeType,
      });
    }
    return 'completed';
  } catch (error) {
    if (error instanceof ImageTimeout) {
      await fail(
        ctx,
        task,
        `timeout: processing took longer than ${settings.processingTimeoutMs / 1000} s; the original is kept`,
      );
      return 'failed';
    }
    if (isDomainError(error) && error.suffix === filesErrors.processingFailed('').suffix) {
      await fail(ctx, task, `processing-failed: ${error.detail}`);
      return 'failed';
    }
    kernel.logger.warn(
      { err: error, fileId: task.fileId, jobId: task.jobId, attempts: task.attempts },
      'image processing could not run; retried',
    );
    const next = afterFailure(task.attempts, MAX_ATTEMPTS, kernel.clock.now(), RETRY);
    if (!next.retry) {
      await fail(ctx, task, 'the job could not run (storage unavailable); the original is kept');
      return 'failed';
    }
    await postponeTask(kernel.db, task, next.at, error instanceof Error ? error.message : String(error));
    return 'retry';
  }
};
