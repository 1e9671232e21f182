import type { Queryable } from './postgres/db';

/**
 * The kernel's durable work queue: one claim, lease, retry and dead-letter shape for every table of
 * work items a context owns (the task queue events.tasks, billing's notices and webhooks, files'
 * tasks, audit's export jobs, the bus's dead letters). The items stay in their context's table
 * (its migrations, its columns, its reads); what a queue is — which rows are due, in which order,
 * how one is claimed without two workers taking it, when a failed one runs again or is given up —
 * is written here once.
 *
 * A claim is one statement: `SELECT … ORDER BY … LIMIT n FOR UPDATE SKIP LOCKED` picks the due
 * items (workers share the queue and never wait on each other), and the same statement marks them
 * leased, so the claim commits before the work starts and no transaction stays open meanwhile. An
 * item whose lease passed (its worker died or hung) is due again: at least once, so handlers are
 * idempotent.
 */
export interface QueueShape {
  /** the table, schema-qualified */
  table: string;
  /** the columns that name one item (its primary key) */
  key: readonly string[];
}

export interface Claim {
  /**
   * the condition of a claimable item: due, not leased (or its lease passed), and whatever the
   * user adds (a tenant's pending anonymization holds an export back). The table is `item`.
   */
  due: string;
  /** ORDER BY of the claim: priorities first, then acceptance order */
  order: string;
  /** the marks of a claimed item (`SET …`, the table is `t`): its lease, one attempt more */
  set: string;
  /** what the claim answers (the table is `t`; the row as it was when picked is `due`) */
  returning: string;
  /** columns of the picked row (`item.`) carried to `returning` as `due.` */
  carry?: readonly string[];
  /** bound values of due/set ($1 …); the claim's limit follows them */
  values: readonly unknown[];
  limit: number;
}

/** the claim statement: pick the due items (skipping the ones other workers hold), lease them, answer them */
export const claimSql = (shape: QueueShape, claim: Omit<Claim, 'values' | 'limit'>, limitParam: number): string => {
  const picked = [...shape.key, ...(claim.carry ?? [])].map((c) => `item.${c}`).join(', ');
  const match = shape.key.map((c) => `t.${c} = due.${c}`).join(' AND ');
  return `WITH due AS (
      SELECT ${picked} FROM ${shape.table} item WHERE ${claim.due} ORDER BY ${claim.order} LIMIT $${limitParam} FOR UPDATE SKIP LOCKED)
    UPDATE ${shape.table} t SET ${claim.set} FROM due WHERE ${match}
    RETURNING ${claim.returning}`;
};

/** claims up to `limit` due items; committed when it returns (unless `q` is a transaction) */
export const claimItems = async <R extends object>(q: Queryable, shape: QueueShape, claim: Claim): Promise<R[]> => {
  if (claim.limit <= 0) return [];
  const { rows } = await q.query<R>(claimSql(shape, claim, claim.values.length + 1), [...claim.values, claim.limit]);
  return rows;
};

/**
 * The wait before an item runs again after its `attempt`-th failure: either a list of steps (the
 * last repeats), or doubling from `baseMs` up to `capMs`, spread by ±`jitter` (random in [0, 1)).
 */
export type Backoff = { steps: readonly number[] } | { baseMs: number; capMs: number; jitter: number };

export const backoffMs = (backoff: Backoff, attempt: number, random = 0.5): number => {
  if ('steps' in backoff) return backoff.steps[Math.min(Math.max(0, attempt - 1), backoff.steps.length - 1)] ?? 0;
  const base = Math.min(backoff.capMs, backoff.baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (1 - backoff.jitter + 2 * backoff.jitter * random));
};

/** what becomes of an item whose `attempt`-th run failed: it runs again later, or it is given up (dead-lettered) */
export type AfterFailure = { retry: true; at: Date } | { retry: false };

export const afterFailure = (
  attempt: number,
  maxAttempts: number,
  now: Date,
  backoff: Backoff | null,
  random = 0.5,
): AfterFailure =>
  attempt >= maxAttempts
    ? { retry: false }
    : { retry: true, at: new Date(now.getTime() + (backoff ? backoffMs(backoff, attempt, random) : 0)) };

/**
 * Runs claimed items paced per key (a tenant, a module): the items of one key one after another,
 * never closer than `intervalMs` apart — measured from `last`, which the caller keeps across claims
 * (real time) so that items claimed late do not go out in a burst —; the keys side by side.
 */
export const runPaced = async <T>(
  items: readonly T[],
  keyOf: (item: T) => string,
  intervalMs: number,
  last: Map<string, number>,
  run: (item: T) => Promise<void>,
): Promise<void> => {
  const byKey = new Map<string, T[]>();
  for (const item of items) byKey.set(keyOf(item), [...(byKey.get(keyOf(item)) ?? []), item]);
  await Promise.all(
    [...byKey.entries()].map(async ([key, keyed]) => {
      for (const item of keyed) {
        const wait = (last.get(key) ?? 0) + intervalMs - Date.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        last.set(key, Date.now());
        await run(item);
      }
    }),
  );
};
