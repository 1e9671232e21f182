import type { Queryable } from '../../infra/postgres/db';
import type { QueueShape } from '../../infra/queue';
import { claimItems } from '../../infra/queue';

/** the files workers' queue (migration 0700, files.tasks): a queue of the kernel's (infra/queue.ts) */
const FILE_TASKS: QueueShape = { table: 'files.tasks', key: ['kind', 'tenant_id', 'file_id', 'job_id'] };

export type TaskKind = 'scan' | 'process';

export interface Task {
  kind: TaskKind;
  tenantId: string;
  fileId: string;
  jobId: string;
  createdAt: Date;
  attempts: number;
}

/** in the transaction of the command that asks for the work */
export const enqueueTask = async (
  q: Queryable,
  task: { kind: TaskKind; tenantId: string; fileId: string; jobId?: string; at: Date },
): Promise<void> => {
  await q.query(
    `INSERT INTO files.tasks (kind, tenant_id, file_id, job_id, created_at, due_at) VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT DO NOTHING`,
    [task.kind, task.tenantId, task.fileId, task.jobId ?? '', task.at],
  );
};

/** tasks due at `now`, leased to this worker until now + leaseMs; newest first when the backlog is deep (spec 002: over 1,000 scans) */
export const claimTasks = async (
  q: Queryable,
  kind: TaskKind,
  now: Date,
  limit: number,
  options: { leaseMs: number; newestFirstOver: number },
): Promise<Task[]> => {
  const {
    rows: [backlog],
  } = await q.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (SELECT 1 FROM files.tasks WHERE kind = $1 AND due_at <= $2 LIMIT $3) due`,
    [kind, now, options.newestFirstOver + 1],
  );
  const order = (backlog?.n ?? 0) > options.newestFirstOver ? 'DESC' : 'ASC';
  const rows = await claimItems<{
    tenant_id: string;
    file_id: string;
    job_id: string;
    created_at: Date;
    attempts: number;
  }>(q, FILE_TASKS, {
    due: 'item.kind = $1 AND item.due_at <= $2 AND item.leased_until <= $2',
    order: `item.created_at ${order}`,
    set: 'leased_until = $3, attempts = t.attempts + 1',
    returning: 't.tenant_id, t.file_id, t.job_id, t.created_at, t.attempts',
    values: [kind, now, new Date(now.getTime() + options.leaseMs)],
    limit,
  });
  return rows.map((r) => ({
    kind,
    tenantId: r.tenant_id,
    fileId: r.file_id,
    jobId: r.job_id,
    createdAt: r.created_at,
    attempts: r.attempts,
  }));
};

export const finishTask = async (
  q: Queryable,
  task: Pick<Task, 'kind' | 'tenantId' | 'fileId' | 'jobId'>,
): Promise<void> => {
  await q.query('DELETE FROM files.tasks WHERE kind = $1 AND tenant_id = $2 AND file_id = $3 AND job_id = $4', [
    task.kind,
    task.tenantId,
    task.fileId,
    task.jobId,
  ]);
};

/** the task waits until dueAt (its lease ends now) */
export const postponeTask = async (q: Queryable, task: Task, dueAt: Date, error: string | null): Promise<void> => {
  await q.query(
    `UPDATE files.tasks SET due_at = $5, leased_until = '-infinity', last_error = $6 WHERE kind = $1 AND tenant_id = $2 AND file_id = $3 AND job_id = $4`,
    [task.kind, task.tenantId, task.fileId, task.jobId, dueAt, error],
  );
};

/** objects to remove once the command that made them useless commits (files.doomed_objects) */
export const doomObjects = async (q: Queryable, tenantId: string, keys: string[], at: Date): Promise<void> => {
  if (keys.length === 0) return;
  await q.query(
    `INSERT INTO files.doomed_objects (key, tenant_id, created_at) SELECT unnest($1::text[]), $2, $3 ON CONFLICT DO NOTHING`,
    [keys, tenantId, at],
  );
};

export const forgetDoomed = async (q: Queryable, keys: string[]): Promise<void> => {
  if (keys.length) await q.query('DELETE FROM files.doomed_objects WHERE key = ANY($1::text[])', [keys]);
};
