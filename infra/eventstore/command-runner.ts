import { DomainError } from '../../domain/shared/errors';
import { withSpan } from '../observability/tracing';
import type { Db, Tx } from '../postgres/db';
import { inTransaction } from '../postgres/db';
import { PgCode, pgErrorCode } from '../postgres/db';
import { pipelined, statement } from '../postgres/pipeline';
import type { ProjectionEngine } from '../projections/engine';
import { StreamVersionConflict } from './errors';
import type { CausationMeta, EventStore } from './event-store';
import type { BatchableCommand, CommandAnswer } from './command-batch';
import { CommandBatcher } from './command-batch';
import type { IdempotencyRequest, StoredResponse, StoredRow } from './idempotency';
import { idempotencyErrors, lockKeysSql, lookupKeysSql, recordsSql, storedAnswer } from './idempotency';
import { UnitOfWork } from './unit-of-work';

export interface CommandRunnerOptions {
  /** how long idempotency records are kept (at least 7 days by default) */
  idempotencyTtlMs: number;
  /** version conflicts retried before giving up, for commands that did not pin a version */
  conflictRetries: number;
  /** waits before each retry after a deadlock or serialization failure */
  deadlockBackoffMs: readonly number[];
  /** group commit of batchable commands (command-batch.ts) */
  batch: { maxSize: number; concurrency: number; onFailure?: (error: unknown, commands: number) => void };
  /** told when an afterCommit callback fails (the platform logs it); the command still answers */
  onAfterCommitFailure?: (error: unknown) => void;
}

export const defaultRunnerOptions: CommandRunnerOptions = {
  idempotencyTtlMs: 7 * 24 * 3600 * 1000,
  conflictRetries: 5,
  deadlockBackoffMs: [100, 200, 400],
  batch: { maxSize: 64, concurrency: 2 },
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Executes commands: one transaction per attempt, holding the appended events, the aggregates'
 * stored states, the inline projections and the idempotency record; retried on version conflicts
 * and deadlocks; at most one execution per idempotency key.
 */
export class CommandRunner {
  private readonly batcher: CommandBatcher;

  constructor(
    private readonly db: Db,
    private readonly store: EventStore,
    private readonly projections: ProjectionEngine | null,
    private readonly options: CommandRunnerOptions = defaultRunnerOptions,
  ) {
    this.batcher = new CommandBatcher(
      db,
      store,
      projections,
      { ...options.batch, idempotencyTtlMs: options.idempotencyTtlMs },
      (c) => this.runIdempotent(c.meta, c.idem, c.fn),
      (callbacks) => this.afterCommit(callbacks),
    );
  }

  /**
   * An idempotent command that names the streams it locks and only records events: it shares a
   * transaction of two round trips with the commands arriving at the same time (command-batch.ts).
   * Same answers as runIdempotent.
   */
  runBatched(command: BatchableCommand): Promise<CommandAnswer> {
    return this.batcher.submit(command);
  }

  /** runs fn in a unit of work and commits; retries the whole of fn on conflicts */
  async run<T>(meta: CausationMeta, fn: (uow: UnitOfWork) => Promise<T>): Promise<T> {
    return withSpan('command', { tenantId: meta.tenantId, traceId: meta.traceId ?? '' }, async () => {
      const { result, committed } = await inTransaction(this.db, (client) => this.attempt(client, meta, fn), {
        savepoint: 'command',
      });
      await this.afterCommit(committed);
      return result;
    });
  }

  /** the afterCommit callbacks of a committed command, in order; a failure is reported, never thrown */
  async afterCommit(callbacks: (() => Promise<void>)[]): Promise<void> {
    for (const callback of callbacks) {
      try {
        await callback();
      } catch (error) {
        this.options.onAfterCommitFailure?.(error);
      }
    }
  }

  /**
   * Runs a command under an idempotency key (mechanism 3), in one transaction: a transaction-level
   * advisory lock on the key makes a concurrent duplicate answer 409 at once instead of waiting or
   * executing twice; a finished one answers the stored response; the new record commits with the
   * events. The key's lock, its lookup and the transaction's start travel in one round trip, and
   * so do the record and the commit.
   */
  async runIdempotent(
    meta: CausationMeta,
    idem: IdempotencyRequest,
    fn: (uow: UnitOfWork) => Promise<unknown>,
  ): Promise<CommandAnswer> {
    return withSpan('command', { tenantId: meta.tenantId, traceId: meta.traceId ?? '', idempotent: true }, () =>
      this.idempotent(meta, idem, fn),
    );
  }

  private async idempotent(
    meta: CausationMeta,
    idem: IdempotencyRequest,
    fn: (uow: UnitOfWork) => Promise<unknown>,
  ): Promise<CommandAnswer> {
    const client = await this.db.connect();
    try {
      const stored = await this.beginKeyed(client, meta.tenantId, idem);
      if (stored) {
        await client.query('ROLLBACK');
        return { ...stored, replayed: true };
      }
      let response: StoredResponse;
      let committed: (() => Promise<void>)[] = [];
      try {
        const attempt = await this.attempt(client, meta, fn);
        response = idem.render(attempt.result);
        committed = attempt.committed;
      } catch (error) {
        const refusal = error instanceof DomainError ? idem.renderError(error) : null;
        if (!refusal) throw error;
        await client.query('ROLLBACK TO SAVEPOINT command');
        response = refusal;
      }
      await pipelined(client, [
        recordsSql([{ tenantId: meta.tenantId, idem, response }], this.options.idempotencyTtlMs),
        statement('COMMIT'),
      ]);
      await this.afterCommit(committed);
      return { ...response, replayed: false };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /**
   * BEGIN, the key's lock, its stored response and the command's savepoint, in one round trip.
   * The lookup is a statement of its own, after the lock: it then runs on a snapshot taken once the
   * lock is held, so it sees the record of a duplicate that held the lock before and committed. (In
   * the same statement as the lock, its snapshot could predate that commit, and the duplicate would
   * run a second time.)
   */
  private async beginKeyed(client: Tx, tenantId: string, idem: IdempotencyRequest): Promise<StoredResponse | null> {
    const results = await pipelined(client, [
      statement('BEGIN'),
      lockKeysSql([{ tenantId, key: idem.key }]),
      lookupKeysSql([{ tenantId, key: idem.key }]),
      statement('SAVEPOINT command'),
    ]);
    if (!(results[1]!.rows[0] as { locked: boolean }).locked) throw idempotencyErrors.inProgress();
    return storedAnswer(idem, results[2]!.rows[0] as StoredRow | undefined);
  }

  /**
   * Runs fn and flushes its unit of work inside the open transaction, from the savepoint
   * "command": a version conflict the client did not pin rolls back to it and runs fn again; a
   * deadlock or serialization failure does the same after a wait (100, 200, 400 ms).
   */
  private async attempt<T>(
    client: Tx,
    meta: CausationMeta,
    fn: (uow: UnitOfWork) => Promise<T>,
  ): Promise<{ result: T; committed: (() => Promise<void>)[] }> {
    let conflicts = 0;
    let deadlocks = 0;
    for (;;) {
      try {
        const uow = new UnitOfWork(client, meta, this.store);
        const result = await fn(uow);
        await uow.flush(this.projections);
        return { result, committed: uow.takeAfterCommit() };
      } catch (error) {
        const code = pgErrorCode(error);
        const conflict = error instanceof StreamVersionConflict && conflicts < this.options.conflictRetries;
        const deadlock =
          (code === PgCode.deadlockDetected || code === PgCode.serializationFailure) &&
          deadlocks < this.options.deadlockBackoffMs.length;
        if (!conflict && !deadlock) throw error;
        await client.query('ROLLBACK TO SAVEPOINT command');
        if (conflict) conflicts += 1;
        else await sleep(this.options.deadlockBackoffMs[deadlocks++]!);
      }
    }
  }
}
