import { notifyEraser } from '../../commands/notify/erasure';
import { erasureWorker } from '../erasure';
import { notifyContext } from '../../commands/notify/context';
import { attemptAll, claim, reapAbandoned, recordOutcomes } from '../../commands/notify/delivery';
import { installNotifyPort } from '../../commands/notify/port';
import { purgeExpired } from '../../commands/notify/retention';
import { WorkerSession } from '../../commands/notify/worker-session';
import type { Kernel } from '../../infra/kernel';
import { defineWorkers } from '../../infra/services';
import type { Worker } from '../../infra/services';
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
  let session: WorkerSession | null = null;
  let opening: Promise<WorkerSession> | null = null;
  let loops: Loop[] = [];
  let lastReap = 0;
  const wakeAll = () => {
    for (const l of loops) l.wake();
  };
  const sessionOf = async (): Promise<WorkerSession> => {
    if (session?.alive) return session;
    const stale = session;
    session = null;
    await stale?.close();
    opening ??= WorkerSession.open(kernel, wakeAll).finally(() => {
      opening = null;
    });
    session = await opening;
    return session;
  };
  const step = async (): Promise<boolean> => {
    const ctx = notifyContext(kernel);
    const { key } = await sessionOf();
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
      await (await opening?.catch(() => null))?.close();
      await session?.close();
      session = null;
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
