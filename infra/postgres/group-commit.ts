import { withSpan } from '../observability/tracing';
import { groupCommitDuration, groupCommitFailures, groupCommitItems } from '../observability/metrics';
import type { Kernel } from '../kernel';
import type { Db, Tx } from './db';

/** an item waiting in a group commit, with the promise its submitter awaits */
export interface Waiting<T, A> {
  item: T;
  resolve: (answer: A) => void;
  reject: (error: unknown) => void;
  answered: boolean;
}

/** answers a waiting item (once: a batch answers each item at most once) */
export const answer = <A>(w: Pick<Waiting<unknown, A>, 'answered' | 'resolve'>, value: A): void => {
  w.answered = true;
  w.resolve(value);
};

export const refuse = (w: Pick<Waiting<unknown, unknown>, 'answered' | 'reject'>, error: unknown): void => {
  w.answered = true;
  w.reject(error);
};

/**
 * Thrown by a batch whose COMMIT was sent and never answered (the connection was lost): it may have
 * committed, so its items are refused with the cause instead of running again — unless an
 * idempotency record makes running again exact, in which case the batch does not throw this.
 */
export class CommitUnknown extends Error {
  constructor(override readonly cause: unknown) {
    super('the outcome of a batch is unknown');
  }
}

export interface GroupCommitOptions<T> {
  /** the span of a batch's transaction */
  span: string;
  /** most items in one transaction */
  maxSize: number;
  /** batches in flight at once; items arriving meanwhile wait and form the next batch */
  concurrency: number;
  /**
   * what an item locks for its batch's whole transaction (its streams): an item needing something
   * a batch in flight holds waits for a later batch instead of joining one that would only wait
   * on that lock in PostgreSQL; items keep their arrival order per lock
   */
  locksOf?: (item: T) => readonly string[];
  /** told when a batch fails and its items run alone (the platform logs a warning) */
  onFailure?: (error: unknown, items: number) => void;
}

/** a failed batch's items run alone, a few at a time (a failed batch of 64 must not ask the pool for 64 connections) */
const FALLBACK_PARALLELISM = 4;

/**
 * Group commit (DESIGN.md mechanism 3 at volume), the one queue of the kernel's command batches and
 * of data's generated creates: items arriving while earlier batches are in flight run together in
 * one transaction on one connection. `run` opens and commits that transaction, answers the items it
 * committed (answer/refuse) and returns those it leaves to run alone; when it throws, the
 * transaction is rolled back and its unanswered items run alone on the ordinary path (`alone`) —
 * or, on CommitUnknown, are refused with the cause. A connection that cannot even roll back is
 * discarded rather than returned to the pool.
 */
export class GroupCommit<T, A> {
  private queue: Waiting<T, A>[] = [];
  private inFlight = 0;
  /** what the batches in flight hold (with how many of them) */
  private readonly held = new Map<string, number>();

  constructor(
    private readonly db: Db,
    private readonly options: GroupCommitOptions<T>,
    private readonly run: (client: Tx, batch: Waiting<T, A>[]) => Promise<Waiting<T, A>[]>,
    private readonly alone: (item: T) => Promise<A>,
  ) {
    const batcher = options.span.replace(/\.batch$/, '');
    this.measured = {
      duration: groupCommitDuration.labels(batcher),
      items: groupCommitItems.labels(batcher),
      failures: groupCommitFailures.labels(batcher),
    };
  }

  /** its metrics, labelled once by the batch span's name (command, events.publish, data.create) */
  private readonly measured: {
    duration: { observe(seconds: number): void };
    items: { observe(items: number): void };
    failures: { inc(): void };
  };

  submit(item: T): Promise<A> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject, answered: false });
      this.pump();
    });
  }

  private locksOf(w: Waiting<T, A>): readonly string[] {
    return this.options.locksOf?.(w.item) ?? [];
  }

  /** starts batches while fewer than `concurrency` are in flight; waiting items keep their arrival order */
  private pump(): void {
    while (this.inFlight < this.options.concurrency && this.queue.length > 0) {
      const batch: Waiting<T, A>[] = [];
      const later: Waiting<T, A>[] = [];
      // locks of items left waiting: a later item on one of them waits too (arrival order per lock)
      const blocked = new Set<string>();
      for (const w of this.queue) {
        const locks = this.locksOf(w);
        if (batch.length < this.options.maxSize && !locks.some((l) => this.held.has(l) || blocked.has(l)))
          batch.push(w);
        else {
          later.push(w);
          for (const l of locks) blocked.add(l);
        }
      }
      if (batch.length === 0) return;
      this.queue = later;
      const locks = batch.flatMap((w) => this.locksOf(w));
      for (const l of locks) this.held.set(l, (this.held.get(l) ?? 0) + 1);
      this.inFlight += 1;
      void this.execute(batch).finally(() => {
        for (const l of locks) {
          const n = (this.held.get(l) ?? 1) - 1;
          if (n === 0) this.held.delete(l);
          else this.held.set(l, n);
        }
        this.inFlight -= 1;
        this.pump();
      });
    }
  }

  private async execute(batch: Waiting<T, A>[]): Promise<void> {
    let client: Tx | null = null;
    let broken = false;
    let later: Waiting<T, A>[] = [];
    const started = performance.now();
    this.measured.items.observe(batch.length);
    try {
      client = await this.db.connect();
      const connected = client;
      later = await withSpan(this.options.span, { items: batch.length }, () => this.run(connected, batch));
    } catch (error) {
      await client?.query('ROLLBACK').catch(() => {
        broken = true;
      });
      this.measured.failures.inc();
      if (error instanceof CommitUnknown) {
        for (const w of batch) if (!w.answered) refuse(w, error.cause);
      } else {
        this.options.onFailure?.(error, batch.length);
        later = batch.filter((w) => !w.answered);
      }
    } finally {
      client?.release(broken);
      this.measured.duration.observe((performance.now() - started) / 1000);
    }
    await Promise.all(
      Array.from({ length: Math.min(FALLBACK_PARALLELISM, later.length) }, async () => {
        for (let w = later.shift(); w; w = later.shift()) {
          try {
            answer(w, await this.alone(w.item));
          } catch (error) {
            refuse(w, error);
          }
        }
      }),
    );
  }
}

/**
 * One batcher per kernel (process), made on first use with the sizes of the kernel's command
 * batches (COMMAND_BATCH_MAX_SIZE, COMMAND_BATCH_CONCURRENCY).
 */
export const batcherPerKernel = <B>(
  make: (kernel: Kernel, options: { maxSize: number; concurrency: number }) => B,
): ((kernel: Kernel) => B) => {
  const made = new WeakMap<Kernel, B>();
  return (kernel) => {
    let found = made.get(kernel);
    if (!found) {
      found = make(kernel, {
        maxSize: kernel.config.COMMAND_BATCH_MAX_SIZE,
        concurrency: kernel.config.COMMAND_BATCH_CONCURRENCY,
      });
      made.set(kernel, found);
    }
    return found;
  };
};
