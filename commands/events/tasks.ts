import { randomInt } from 'node:crypto';
import { errorText } from '../../domain/events/delivery';
import type { Kernel } from '../../infra/kernel';
import { withTimeout } from '../../infra/log/support';
import type { ClaimedTask } from '../../infra/tasks';
import { afterFailure, claimItems } from '../../infra/queue';
import type { QueueShape } from '../../infra/queue';
import { taskBackoff, taskHandlers } from '../../infra/tasks';
import { eventsContext } from './context';

/** events.tasks, the kernel's general queue, as a queue table (infra/queue.ts) */
const TASKS: QueueShape = { table: 'events.tasks', key: ['id'] };
const random = () => randomInt(0, 2 ** 32) / 2 ** 32;

interface ClaimedRow {
  id: string;
  tenant_id: string;
  type: string;
  payload: Record<string, unknown>;
  attempts: number;
  max_attempts: number;
  trace_id: string | null;
}

/**
 * One step of the task worker (infra/tasks.ts): claims due tasks of the types this process can run
 * (committed before they run: no transaction stays open meanwhile), runs them within their lease,
 * then records done, or queued again after a backoff, or failed after maxAttempts. A running task
 * whose lease passed (its worker died or it hung) is queued again first: at least once.
 */
export const runDueTasks = async (kernel: Kernel, limit: number): Promise<number> => {
  const handlers = taskHandlers(kernel);
  if (handlers.size === 0) return 0;
  const ctx = eventsContext(kernel);
  const now = kernel.clock.now();
  await kernel.db.query(
    `UPDATE events.tasks SET status = CASE WHEN attempts >= max_attempts THEN 'failed' ELSE 'queued' END,
      lease_until = NULL, last_error = 'the task did not finish within its lease (worker lost or too slow)', run_at = $1, updated_at = $1
    WHERE status = 'running' AND lease_until < $1`,
    [now],
  );
  const rows = await claimItems<ClaimedRow>(kernel.db, TASKS, {
    due: `item.status = 'queued' AND item.run_at <= $1 AND item.type = ANY($3::text[])`,
    order: 'item.run_at',
    set: `status = 'running', attempts = t.attempts + 1, lease_until = $2, updated_at = $1`,
    returning: 't.id, t.tenant_id, t.type, t.payload, t.attempts, t.max_attempts, t.trace_id',
    values: [now, new Date(now.getTime() + ctx.settings.taskLeaseMs), [...handlers.keys()]],
    limit,
  });
  await Promise.all(
    rows.map(async (row) => {
      const task: ClaimedTask = {
        id: row.id,
        tenantId: row.tenant_id,
        type: row.type,
        payload: row.payload,
        attempt: row.attempts,
        maxAttempts: row.max_attempts,
        traceId: row.trace_id,
      };
      try {
        await withTimeout(handlers.get(row.type)!(task), ctx.settings.taskLeaseMs, `task ${row.type}`);
        await kernel.db.query(
          `UPDATE events.tasks SET status = 'done', lease_until = NULL, last_error = NULL, completed_at = $2, updated_at = $2 WHERE id = $1 AND status = 'running'`,
          [row.id, kernel.clock.now()],
        );
      } catch (error) {
        const at = kernel.clock.now();
        const next = afterFailure(
          row.attempts,
          row.max_attempts,
          at,
          taskBackoff(ctx.settings.taskBackoffMs),
          random(),
        );
        const failed = !next.retry;
        await kernel.db.query(
          `UPDATE events.tasks SET status = $2, lease_until = NULL, last_error = $3, run_at = $4, updated_at = $5 WHERE id = $1 AND status = 'running'`,
          [
            row.id,
            next.retry ? 'queued' : 'failed',
            errorText(error instanceof Error ? error.message : String(error)),
            next.retry ? next.at : at,
            at,
          ],
        );
        kernel.logger.warn(
          { err: error, taskId: row.id, type: row.type, attempt: row.attempts, failed },
          failed ? 'task failed for good' : 'task failed; retrying later',
        );
      }
    }),
  );
  return rows.length;
};
