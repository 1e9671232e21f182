import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Db, Queryable } from './postgres/db';
import { sessionClient } from './postgres/db';
import { literal } from './postgres/inline';

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
 *
 * Options a queue composes as it needs them (notify's deliveries use them all): a pick inside the
 * user's own transaction (`pickSql`: rows locked, decided on, then marked), leases tied to the
 * worker's session (`QueueSession`, `leaseLapsed`: a killed worker's claims are due at once),
 * wake-up on new work (`wakeSql` and the session's LISTEN), rate windows shared by every process
 * (`admitInWindows`), a deadline per run (`withinDeadline`), pacing per key (`runPaced`), and the
 * backoff and give-up decision (`afterFailure`: dead-lettered after the last attempt).
 */
export interface QueueShape {
  /** the table, schema-qualified */
  table: string;
  /** the columns that name one item (its primary key) */
  key: readonly string[];
}

// The statements: one pick, the claim built on it, and the conditions a queue puts in their `due`

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

export interface Pick {
  /** what the pick answers (the table is `item`) */
  columns: string;
  /** FROM: the table as `item` (default), or with joins */
  from?: string;
  due: string;
  order?: string;
  /** a number, or the bound parameter holding it */
  limit: string | number;
  /** with joins: the alias whose rows are locked */
  lockOf?: string;
}

/** the one pick of every queue: the due items in order, skipping the ones other workers hold (locked until commit) */
export const pickSql = (shape: QueueShape, pick: Pick): string =>
  `SELECT ${pick.columns} FROM ${pick.from ?? `${shape.table} item`} WHERE ${pick.due}${pick.order ? ` ORDER BY ${pick.order}` : ''} LIMIT ${pick.limit} FOR UPDATE${pick.lockOf ? ` OF ${pick.lockOf}` : ''} SKIP LOCKED`;

/** the claim statement: pick the due items, lease them, answer them — one statement, committed before the work */
export const claimSql = (shape: QueueShape, claim: Omit<Claim, 'values' | 'limit'>, limitParam: number): string => {
  const picked = [...shape.key, ...(claim.carry ?? [])].map((c) => `item.${c}`).join(', ');
  const match = shape.key.map((c) => `t.${c} = due.${c}`).join(' AND ');
  return `WITH due AS (
      ${pickSql(shape, { columns: picked, due: claim.due, order: claim.order, limit: `$${limitParam}` })})
    UPDATE ${shape.table} t SET ${claim.set} FROM due WHERE ${match}
    RETURNING ${claim.returning}`;
};

/** SQL: the worker holding key expression k (a bigint) is alive, its session lock held */
export const holderIsLive = (k: string) => `EXISTS (
  SELECT 1 FROM pg_locks l
   WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
     AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
     AND l.classid = ((${k} >> 32) & 4294967295)::oid
     AND l.objid = (${k} & 4294967295)::oid)`;

/** SQL: a claimed item whose lease passed, or whose holder's session is gone */
export const leaseLapsed = (holder: string, leaseUntil: string, now: string) =>
  `(${leaseUntil} <= ${now} OR ${holder} IS NULL OR NOT ${holderIsLive(holder)})`;

/** SQL for a pick: the window of scope expression `scope` is used up (its items are skipped, not locked) */
export const windowFull = (table: string, scope: string, limit: number, now: Date) =>
  `EXISTS (SELECT 1 FROM ${table} w WHERE w.scope = ${scope} AND w.window_start > ${literal(new Date(now.getTime() - WINDOW_MS))} AND w.used >= ${limit})`;

/** new work announced (with the transaction that adds it): every session LISTENing on the channel wakes */
export const wakeSql = (channel: string) => `SELECT pg_notify('${channel}', '')`;

// The pure decisions: when an item runs again or is given up, which items a rate window admits

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
 * Rate windows shared by every worker process: a fixed window per scope (a tenant, a module),
 * opened by the first item it admits, kept in the user's table (scope text primary key,
 * window_start timestamptz, used int). An item over a limit is not refused — it stays queued and
 * is admitted in a later window (delayed, never dropped).
 */
export interface RateWindow {
  /** epoch ms the window opened */
  start: number;
  used: number;
}

export interface RateCandidate {
  id: string;
  /** the scopes the item counts against; none for exempt items */
  scopes: readonly { key: string; limit: number }[];
}

export const WINDOW_MS = 60_000;

const current = (w: RateWindow | undefined, now: number): RateWindow =>
  !w || now >= w.start + WINDOW_MS ? { start: now, used: 0 } : w;

/**
 * Admits candidates in the order given (priority, then age) while every scope they count against
 * has room. Returns the admitted ids and the windows after admission (only scopes it touched).
 */
export const admit = (
  candidates: readonly RateCandidate[],
  windows: ReadonlyMap<string, RateWindow>,
  now: number,
): { admitted: string[]; windows: Map<string, RateWindow> } => {
  const next = new Map<string, RateWindow>();
  const windowOf = (key: string) => next.get(key) ?? current(windows.get(key), now);
  const admitted: string[] = [];
  for (const c of candidates) {
    if (c.scopes.some((s) => windowOf(s.key).used >= s.limit)) continue;
    for (const s of c.scopes) {
      const w = windowOf(s.key);
      next.set(s.key, { start: w.start, used: w.used + 1 });
    }
    admitted.push(c.id);
  }
  return { admitted, windows: next };
};

// Running: claim and admit, hold the worker's session, bound and pace the work

/** claims up to `limit` due items; committed when it returns (unless `q` is a transaction) */
export const claimItems = async <R extends object>(q: Queryable, shape: QueueShape, claim: Claim): Promise<R[]> => {
  if (claim.limit <= 0) return [];
  const { rows } = await q.query<R>(claimSql(shape, claim, claim.values.length + 1), [...claim.values, claim.limit]);
  return rows;
};

/**
 * Admits picked candidates against the windows, inside the claim's transaction: the windows' rows
 * are locked (created first, so two claimers serialize on them instead of both inserting). Answers
 * the admitted ids and the statement that records the windows (run it before the commit), if any.
 */
export const admitInWindows = async (
  tx: Queryable,
  table: string,
  candidates: readonly RateCandidate[],
  now: Date,
): Promise<{ admitted: Set<string>; record: string | null }> => {
  const keys = windowKeys(candidates);
  const locked = keys.length
    ? ((await tx.query(lockWindowsSql(table, keys))) as unknown as [unknown, { rows: WindowRow[] }])[1].rows
    : [];
  return admitLocked(table, candidates, locked, now);
};

/** the window rows a set of candidates counts against, as SELECTed by lockWindowsSql */
export interface WindowRow {
  scope: string;
  window_start: Date;
  used: number;
}

/** the scopes the candidates count against, sorted (the order their rows are locked in) */
export const windowKeys = (candidates: readonly RateCandidate[]): string[] =>
  [...new Set(candidates.flatMap((c) => c.scopes.map((s) => s.key)))].sort();

/**
 * Two statements (send them as one simple-protocol query; the second answers the rows): the
 * windows' rows created if missing, then locked in scope order, so two claimers serialize on them
 * instead of both inserting
 */
export const lockWindowsSql = (table: string, keys: readonly string[]): string =>
  `INSERT INTO ${table} (scope, window_start, used) SELECT k, 'epoch', 0 FROM unnest(${literal([...keys])}::text[]) k ON CONFLICT DO NOTHING;
      SELECT scope, window_start, used FROM ${table} WHERE scope = ANY(${literal([...keys])}::text[]) ORDER BY scope FOR UPDATE`;

/** admitInWindows once the windows' rows are locked (lockWindowsSql sent with other statements) */
export const admitLocked = (
  table: string,
  candidates: readonly RateCandidate[],
  locked: readonly WindowRow[],
  now: Date,
): { admitted: Set<string>; record: string | null } => {
  const windows = new Map<string, RateWindow>();
  for (const w of locked) windows.set(w.scope, { start: w.window_start.getTime(), used: w.used });
  const decision = admit(candidates, windows, now.getTime());
  const values = [...decision.windows]
    .map(([scope, w]) => `(${literal(scope)}, ${literal(new Date(w.start))}, ${w.used})`)
    .join(', ');
  return {
    admitted: new Set(decision.admitted),
    record: values
      ? `UPDATE ${table} r SET window_start = v.start, used = v.used FROM (VALUES ${values}) AS v(scope, start, used) WHERE r.scope = v.scope`
      : null,
  };
};

/**
 * Leases tied to the worker's session: a worker process holds a dedicated connection with a session
 * advisory lock on its key (the key its claimed items carry) and LISTENs for new work. When the
 * process dies or the connection drops, PostgreSQL frees the lock at once, so its items are due
 * again (`leaseLapsed`) without a lease having to run out first — a kill mid-run costs a duplicate
 * at worst, never a loss.
 */
export class QueueSession {
  private failed = false;

  private constructor(
    private readonly client: pg.Client,
    readonly key: bigint,
  ) {}

  /** `name` marks the connection (application_name); `channels` are LISTENed, each notification calls onWork */
  static async open(
    pool: Db,
    name: string,
    channels: readonly string[],
    onWork: () => void,
    onLost: (error: unknown) => void = () => undefined,
  ): Promise<QueueSession> {
    const client = sessionClient(pool, name);
    // a positive 63-bit key: split into the two 32-bit halves pg_locks shows (classid, objid)
    const key = randomBytes(8).readBigUInt64BE() >> 1n;
    const session = new QueueSession(client, key === 0n ? 1n : key);
    client.on('error', (error) => {
      session.failed = true;
      onLost(error);
    });
    client.on('notification', () => onWork());
    await client.connect();
    try {
      await client.query('SELECT pg_advisory_lock($1::bigint)', [session.key.toString()]);
      for (const channel of channels) await client.query(`LISTEN ${channel}`);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    return session;
  }

  get alive(): boolean {
    return !this.failed;
  }

  async close(): Promise<void> {
    await this.client.end().catch(() => undefined);
  }
}

/** a worker's session kept open: reopened (with a new key) once lost; the claims of the lost one are due again */
export const keptSession = (open: () => Promise<QueueSession>) => {
  let session: QueueSession | null = null;
  let opening: Promise<QueueSession> | null = null;
  return {
    async current(): Promise<QueueSession> {
      if (session?.alive) return session;
      const stale = session;
      session = null;
      await stale?.close();
      opening ??= open().finally(() => {
        opening = null;
      });
      session = await opening;
      return session;
    },
    async close(): Promise<void> {
      await (await opening?.catch(() => null))?.close();
      await session?.close();
      session = null;
    },
  };
};

/** runs `run` under a deadline of `ms`: past it the run is aborted (its signal) and `timedOut()` answered */
export const withinDeadline = async <T>(
  ms: number,
  run: (signal: AbortSignal) => Promise<T>,
  timedOut: () => T,
): Promise<T> => {
  const aborter = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<T>((resolve) => {
    timer = setTimeout(() => {
      aborter.abort();
      resolve(timedOut());
    }, ms);
  });
  try {
    return await Promise.race([run(aborter.signal), deadline]);
  } finally {
    clearTimeout(timer);
  }
};

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
