import { eventsEraser } from '../../commands/events/erasure';
import { erasureWorker } from '../erasure';
import { eventsContext } from '../../commands/events/context';
import { redriveDue } from '../../commands/events/dlq';
import { checkLag } from '../../commands/events/lag';
import { runDueTasks } from '../../commands/events/tasks';
import type { Kernel } from '../../infra/kernel';
import type { Worker } from '../../infra/modules';
import { defineWorkers } from '../../infra/modules';
import type { Loop } from '../loop';
import { startLoop } from '../loop';
import { deliveryWorker } from './delivery';
import { fanoutWorker } from './fanout';
import { BusRelay } from './relay';

/** a worker of one loop that logs its failures now and then */
const loopWorker = (kernel: Kernel, name: string, step: () => Promise<boolean>, idleMs: () => number): Worker => {
  let loop: Loop | null = null;
  return {
    name,
    start() {
      loop = startLoop(step, {
        idleMs: idleMs(),
        onError: (error, failures) => {
          if (failures === 1 || failures % 30 === 0)
            kernel.logger.warn({ err: error, failures }, `${name} failed; retrying`);
        },
      });
    },
    async stop() {
      await loop?.stop();
      loop = null;
    },
  };
};

export const relayWorker = (kernel: Kernel): Worker => {
  const relay = new BusRelay(kernel);
  return { name: 'events.relay', start: () => relay.start(), stop: () => relay.stop() };
};

/** redelivers dead letters whose retry is due, at the replay rate (their due times are spaced by it) */
export const redriveWorker = (kernel: Kernel): Worker =>
  loopWorker(
    kernel,
    'events.redrive',
    async () => (await redriveDue(kernel, 50)).handled > 0,
    () => Math.min(100, eventsContext(kernel).settings.pollIntervalMs),
  );

export const lagWorker = (kernel: Kernel): Worker =>
  loopWorker(
    kernel,
    'events.lag-alerts',
    async () => {
      await checkLag(kernel);
      return false;
    },
    () => eventsContext(kernel).settings.lagCheckIntervalMs,
  );

export const taskWorker = (kernel: Kernel): Worker =>
  loopWorker(
    kernel,
    'events.tasks',
    async () => (await runDueTasks(kernel, 20)) > 0,
    () => eventsContext(kernel).settings.taskPollIntervalMs,
  );

/**
 * The bus's workers (docs/decisions.md, Event bus): the relay of staged publishes, the per-tenant
 * fan-out of subscribed topics, delivery with retries and the DLQ, redrives, lag alerts, the task queue.
 */
export default defineWorkers({
  workers: (kernel) => [
    relayWorker(kernel),
    fanoutWorker(kernel),
    deliveryWorker(kernel),
    redriveWorker(kernel),
    lagWorker(kernel),
    taskWorker(kernel),
    erasureWorker(kernel, eventsEraser),
  ],
});
