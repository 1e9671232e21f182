import { setTimeout as sleep } from 'node:timers/promises';
import type { FilesContext } from '../../commands/files/context';
import type { Task, TaskKind } from '../../commands/files/tasks';
import { claimTasks } from '../../commands/files/tasks';
import type { Worker } from '../../infra/services';

/** spec 002: with more than 1,000 scans waiting, the newest go first */
const NEWEST_FIRST_OVER = 1000;

/**
 * Runs the files tasks of one kind, up to `concurrency` at once: claims as many as there are free
 * slots (a lease, no transaction held), runs them, and looks again as soon as one finishes, when a
 * command of this process says work is waiting (ctx.wake), or every FILES_WORKER_POLL_MS.
 */
export const taskWorker = (
  ctx: FilesContext,
  name: string,
  kind: TaskKind,
  concurrency: number,
  run: (task: Task) => Promise<unknown>,
): Worker => {
  let running = false;
  let done: Promise<void> = Promise.resolve();
  let wake: (() => void) | null = null;
  let unsubscribe: () => void = () => undefined;
  const poke = () => wake?.();
  const waitForWork = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        wake = null;
        resolve();
      }, ms);
      wake = () => {
        clearTimeout(timer);
        wake = null;
        resolve();
      };
    });

  const loop = async () => {
    const inFlight = new Set<Promise<unknown>>();
    let failures = 0;
    while (running) {
      const free = concurrency - inFlight.size;
      let claimed = 0;
      if (free > 0) {
        try {
          const tasks = await claimTasks(ctx.kernel.db, kind, ctx.kernel.clock.now(), free, {
            leaseMs: ctx.settings.leaseMs,
            newestFirstOver: NEWEST_FIRST_OVER,
          });
          claimed = tasks.length;
          failures = 0;
          for (const task of tasks) {
            const work: Promise<unknown> = run(task)
              .catch((error: unknown) =>
                ctx.kernel.logger.warn(
                  { err: error, task },
                  `${name}: a task failed; it is taken again when its lease ends`,
                ),
              )
              .finally(() => {
                inFlight.delete(work);
                poke();
              });
            inFlight.add(work);
          }
        } catch (error) {
          failures += 1;
          ctx.kernel.logger.warn({ err: error }, `${name}: could not claim tasks`);
          await sleep(Math.min(30_000, ctx.settings.pollMs * 2 ** Math.min(failures, 8)));
          continue;
        }
      }
      if (running && (claimed === 0 || inFlight.size >= concurrency)) await waitForWork(ctx.settings.pollMs);
    }
    await Promise.allSettled([...inFlight]);
  };

  return {
    name,
    start() {
      if (running) return;
      running = true;
      unsubscribe = ctx.onWake(kind, poke);
      done = loop();
    },
    async stop() {
      running = false;
      unsubscribe();
      poke();
      await done;
    },
  };
};
