import type { Queryable } from './postgres/db';
import type { Backoff } from './queue';

/**
 * The task queue (spec 002: "a separate task queue carries transactional tasks"; migration
 * 0802_events_tasks.sql). A command enqueues with `uow.enqueueTask(...)`: the task is written in the
 * command's transaction, so it exists exactly when the business change committed. Workers of the
 * processes that registered a handler for its type (`registerTaskHandler`) run it at least once:
 * claimed with a lease (committed before the handler runs), retried with exponential backoff, then
 * failed after maxAttempts. Handlers must be idempotent (a task whose worker died runs again).
 */
export interface TaskRequest {
  /** what to run: the handler registered under this name (domain.thing.action style) */
  type: string;
  payload: Record<string, unknown>;
  /** not before this time (default: now) */
  runAt?: Date;
  /** attempts before the task is failed (default 10) */
  maxAttempts?: number;
}

export interface PendingTask {
  id: string;
  tenantId: string;
  type: string;
  payload: Record<string, unknown>;
  runAt: Date;
  maxAttempts: number;
  traceId: string | null;
  createdAt: Date;
}

export const DEFAULT_TASK_ATTEMPTS = 10;
export const TASK_TYPE = /^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)+$/;

/** a task of the queue as a handler gets it */
export interface ClaimedTask {
  id: string;
  tenantId: string;
  type: string;
  payload: Record<string, unknown>;
  /** 1 for the first run */
  attempt: number;
  maxAttempts: number;
  traceId: string | null;
}

export type TaskHandler = (task: ClaimedTask) => Promise<void>;

const handlers = new WeakMap<object, Map<string, TaskHandler>>();

/** the handlers of a process (per kernel); a worker claims only tasks whose type it can run */
export const registerTaskHandler = (kernel: object, type: string, handler: TaskHandler): void => {
  if (!TASK_TYPE.test(type)) throw new Error(`task type ${type} is not a dotted lowercase name`);
  const map = handlers.get(kernel) ?? new Map<string, TaskHandler>();
  map.set(type, handler);
  handlers.set(kernel, map);
};
export const taskHandlers = (kernel: object): ReadonlyMap<string, TaskHandler> => handlers.get(kernel) ?? new Map();

/** the insert of a unit of work's tasks: one statement whatever their number */
export const insertTasks = (tasks: readonly PendingTask[]): { text: string; values: unknown[] } => ({
  text: `INSERT INTO events.tasks (id, tenant_id, type, payload, status, max_attempts, run_at, trace_id, created_at, updated_at)
    SELECT t.id, t.tenant_id, t.type, t.payload::jsonb, 'queued', t.max_attempts, t.run_at, t.trace_id, t.created_at, t.created_at
      FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::int[], $6::timestamptz[], $7::text[], $8::timestamptz[])
        AS t(id, tenant_id, type, payload, max_attempts, run_at, trace_id, created_at)`,
  values: [
    tasks.map((t) => t.id),
    tasks.map((t) => t.tenantId),
    tasks.map((t) => t.type),
    tasks.map((t) => JSON.stringify(t.payload)),
    tasks.map((t) => t.maxAttempts),
    tasks.map((t) => t.runAt),
    tasks.map((t) => t.traceId),
    tasks.map((t) => t.createdAt),
  ],
});

export const writeTasks = async (q: Queryable, tasks: readonly PendingTask[]): Promise<void> => {
  if (tasks.length === 0) return;
  const { text, values } = insertTasks(tasks);
  await q.query(text, values);
};

/** the wait before the next attempt: 1 s, 2 s, 4 s … capped at an hour, ±10 % */
export const taskBackoff = (baseMs = 1000): Backoff => ({ baseMs, capMs: 3600_000, jitter: 0.1 });
