import { filesEraser } from '../../commands/files/erasure';
import { erasureWorker } from '../erasure';
import { filesContext } from '../../commands/files/context';
import { runProcessingJob } from '../../commands/files/processing';
import { scanStaged } from '../../commands/files/scanning';
import { claimSweep, sweepFiles } from '../../commands/files/sweep';
import { defineWorkers } from '../../infra/services';
import type { Loop } from '../loop';
import { startLoop } from '../loop';
import { taskWorker } from './tasks';

/**
 * The files workers (run by `platform start` and `platform serve workers`): the scanner (staged
 * files to clamd, then released or rejected), image processing jobs, and the daily sweep (staging
 * TTL, trash after the restore window, orphans, stray staging objects).
 */
export default defineWorkers({
  workers: (kernel) => {
    const ctx = filesContext(kernel);
    const { concurrency } = ctx.settings;
    let sweep: Loop | null = null;
    return [
      erasureWorker(kernel, filesEraser),
      taskWorker(ctx, 'files.scanner', 'scan', concurrency, (task) => scanStaged(ctx, task)),
      taskWorker(ctx, 'files.processing', 'process', Math.max(1, Math.floor(concurrency / 2)), (task) =>
        runProcessingJob(ctx, task),
      ),
      {
        name: 'files.sweep',
        start() {
          sweep = startLoop(
            async () => {
              if (!(await claimSweep(ctx, 'files.daily'))) return false;
              const report = await sweepFiles(ctx);
              kernel.logger.info({ ...report }, 'files sweep done');
              return false;
            },
            {
              // look often enough to notice the interval has passed; claimSweep keeps it once per interval across processes
              idleMs: Math.min(ctx.settings.sweepIntervalMs, 15 * 60_000),
              onError: (error) => kernel.logger.warn({ err: error }, 'files sweep failed'),
            },
          );
        },
        async stop() {
          await sweep?.stop();
        },
      },
    ];
  },
});
