import { notifyEraser } from '../../commands/notify/erasure';
import { erasureWorker } from '../erasure';
import { notifyContext } from '../../commands/notify/context';
import { attemptAll, claim, reapAbandoned, recordOutcomes } from '../../commands/notify/delivery';
import { installNotifyPort } from '../../commands/notify/port';
import { purgeExpired } from '../../commands/notify/retention';
import { QUEUE_CHANNEL } from '../../commands/notify/queue';
import type { Kernel } from '../../infra/kernel';
import { defineWorkers } from '../../infra/modules';
import type { Worker } from '../../infra/modules';
import { keptSession, QueueSession } from '../../infra/queue';
import type { Loop } from '../loop';
import { startLoop } from '../loop';

const REAP_EVERY_MS = 1_000;
const PURGE_EVERY_MS = 3600_000;

/**
 * Delivery: NOTIFY_WORKER_CONCURRENCY loops per process, each claiming a batch (committed), sending
 * it (no transaction open meanwhile: docs/kernel.md, last section), then recording the outcomes
 * (committed). The process's session lock marks its claims as alive; the loops wake on new work.
 */
export const deliveryWorker = (kernel: Kernel): Worker & { step(): Promise<boolean> } => {
  let loops: Loop[] = [];
  let lastReap = 0;
  const wakeAll = () => {
    for (const l of loops) l.wake();
  };
  const session = keptSession(() =>
    QueueSession.open(kernel.db, 'notify-worker', [QUEUE_CHANNEL], wakeAll, (error) =>
      kernel.logger.warn({ err: error }, 'notify worker session lost; reopening'),
    ),
  );
  const step = async (): Promise<boolean> => {
    const ctx = notifyContext(kernel);
    const { key } = await session.current();
    if (Date.now() - lastReap >= REAP_EVERY_MS) {
      lastReap = Date.now();
      const reaped = await reapAbandoned(kernel, ctx);
      if (reaped) kernel.logger.warn({ reaped }, 'notifications of a lost worker queued again');
    }
    const claimed = await claim(kernel, ctx, key);
    if (claimed.length === 0) return false;
    const outcomes = await attemptAll(ctx, claimed);
    await recordOutcomes(kernel, ctx, key, outcomes);
    return true;
  };
  return {
    name: 'notify.delivery',
    step,
    start() {
      const ctx = notifyContext(kernel);
      installNotifyPort(kernel);
      loops = Array.from({ length: ctx.settings.workerConcurrency }, () =>
        startLoop(step, {
          idleMs: ctx.settings.pollIntervalMs,
          onError: (error, failures) => {
            if (failures === 1 || failures % 30 === 0)
              kernel.logger.warn({ err: error, failures }, 'notification delivery failed; retrying');
          },
        }),
      );
    },
    async stop() {
      await Promise.all(loops.map((l) => l.stop()));
      loops = [];
      await session.close();
    },
  };
};

/** retention: once at start, then hourly */
const retentionWorker = (kernel: Kernel): Worker => {
  let loop: Loop | null = null;
  return {
    name: 'notify.retention',
    start() {
      loop = startLoop(
        async () => {
          const purged = await purgeExpired(kernel, notifyContext(kernel));
          if (purged.history || purged.failed) kernel.logger.info(purged, 'notification history purged');
          return false;
        },
        {
          idleMs: PURGE_EVERY_MS,
          onError: (error) => kernel.logger.warn({ err: error }, 'notification retention failed'),
        },
      );
    },
    async stop() {
      await loop?.stop();
    },
  };
};

export default defineWorkers({
  workers: (kernel) => [deliveryWorker(kernel), retentionWorker(kernel), erasureWorker(kernel, notifyEraser)],
});
