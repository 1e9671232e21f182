import { DomainError } from '../../domain/shared/errors';
import type { Db, Tx } from '../postgres/db';
import type { Waiting } from '../postgres/group-commit';
import { answer, GroupCommit, refuse } from '../postgres/group-commit';
import { pipelined, statement } from '../postgres/pipeline';
import { observeAppend } from '../observability/metrics';
import type { ProjectionEngine } from '../projections/engine';
import type { IdempotencyRequest, KeyRef, StoredResponse, StoredRow } from './idempotency';
import { idempotencyErrors, lockKeysSql, lookupKeysSql, recordsSql, storedAnswer } from './idempotency';
import type { AppendRequest, CausationMeta, EventStore, HeadRow, StreamHead } from './event-store';
import { bigintReplacer, HEAD_COLUMNS, headOf } from './event-store';
import type { PendingTask } from '../tasks';
import { insertTasks } from '../tasks';
import { stageAuditSql } from '../audit';
import type { OutgoingRecord } from '../log/port';
import type { StreamHeads } from './unit-of-work';
import { UnitOfWork } from './unit-of-work';

/**
 * A command that can share a transaction with others: it names up front the streams it locks,
 * and its fn only reads (through the unit of work and its tx) and records events; it never writes
 * through uow.tx nor flushes, so a refused command leaves nothing behind in the shared transaction.
 */
export interface BatchableCommand {
  meta: CausationMeta;
  idem: IdempotencyRequest;
  /** the streams fn locks: locked for the whole batch, in ascending order, before any command runs */
  locks: string[];
  fn: (uow: UnitOfWork) => Promise<unknown>;
}

export type CommandAnswer = StoredResponse & { replayed: boolean };

export interface BatchOptions {
  /** most commands in one transaction */
  maxSize: number;
  /** batches in flight at once; commands arriving meanwhile wait and form the next batch */
  concurrency: number;
  idempotencyTtlMs: number;
  /** told when a batch fails and its commands run alone (the platform logs a warning) */
  onFailure?: (error: unknown, commands: number) => void;
}

type WaitingCommand = Waiting<BatchableCommand, CommandAnswer>;

interface Decided {
  waiting: WaitingCommand;
  response: StoredResponse;
  appends: AppendRequest[];
  /** tasks the command queued (UnitOfWork.enqueueTask), written with its appends */
  tasks: PendingTask[];
  /** audit records the command staged (UnitOfWork.audit), written with its appends */
  audits: OutgoingRecord[];
  /** the command's afterCommit callbacks, run once the batch committed and before it answers */
  committed: (() => Promise<void>)[];
}

/**
 * Group commit for commands (mechanism 3 at volume): commands that arrive while earlier batches
 * are in flight are run together in one transaction of two round trips, whatever their number
 * (each a pipeline of statements with their values bound):
 *
 *   1. BEGIN; try-lock every idempotency key; read their records; lock every named stream in
 *      ascending id order and read its head;
 *   2. the commands' appends, inline projection statements and idempotency records; COMMIT.
 *
 * Between the two, each command is decided in memory, in arrival order, on the heads as the
 * commands before it in the batch left them (so two transfers out of one wallet in one batch see
 * each other). A refused command records nothing; a replay or a key in use is answered at once.
 * Answers are given after the COMMIT. When anything unexpected fails (a deadlock with a command
 * outside the batch, a lost connection, a statement error), the batch is rolled back and its
 * unanswered commands run alone on the ordinary path, where the idempotency records make the
 * retry exact even if the COMMIT's fate is unknown.
 *
 * A batch of one is the ordinary case at low load: two round trips instead of one per step.
 */
export class CommandBatcher {
  private readonly group: GroupCommit<BatchableCommand, CommandAnswer>;

  constructor(
    db: Db,
    private readonly store: EventStore,
    private readonly projections: ProjectionEngine | null,
    private readonly options: BatchOptions,
    /** the ordinary path, for the commands of a batch that failed */
    alone: (command: BatchableCommand) => Promise<CommandAnswer>,
    /** runs a committed command's afterCommit callbacks (UnitOfWork.afterCommit) */
    private readonly afterCommit: (callbacks: (() => Promise<void>)[]) => Promise<void> = async () => undefined,
  ) {
    // batches in flight at once touch different streams (locksOf), so they overlap instead of
    // queueing behind each other in PostgreSQL; a failed batch's commands run alone, where the
    // idempotency records make the retry exact even if its COMMIT's fate is unknown
    this.group = new GroupCommit(
      db,
      {
        span: 'command.batch',
        maxSize: options.maxSize,
        concurrency: options.concurrency,
        locksOf: (command) => command.locks,
        onFailure: options.onFailure,
      },
      async (client, batch) => {
        await this.run(client, batch);
        return [];
      },
      alone,
    );
  }

  submit(command: BatchableCommand): Promise<CommandAnswer> {
    return this.group.submit(command);
  }

  private async run(client: Tx, batch: WaitingCommand[]): Promise<void> {
    const keys: KeyRef[] = batch.map((w) => ({ tenantId: w.item.meta.tenantId, key: w.item.idem.key }));
    const streams = [...new Set(batch.flatMap((w) => w.item.locks))].sort();
    const results = await pipelined(client, [
      statement('BEGIN'),
      lockKeysSql(keys),
      lookupKeysSql(keys),
      {
        name: 'es_batch_heads',
        text: `SELECT stream_id, ${HEAD_COLUMNS} FROM es.streams WHERE stream_id = ANY($1::text[]) ORDER BY stream_id FOR UPDATE`,
        values: [streams],
      },
    ]);
    const locked = results[1]!.rows as { i: string; locked: boolean }[];
    const stored = new Map((results[2]!.rows as StoredRow[]).map((r) => [Number(r.i), r]));
    const heads = new BatchHeads(client, this.store, new Map(streams.map((id) => [id, null])));
    for (const r of results[3]!.rows as (HeadRow & { stream_id: string })[]) {
      heads.cache.set(r.stream_id, headOf(r));
    }

    const decided: Decided[] = [];
    const seen = new Set<string>();
    for (const [index, w] of batch.entries()) {
      const keyId = `${keys[index]!.tenantId}:${keys[index]!.key}`;
      if (!locked[index]!.locked) {
        refuse(w, idempotencyErrors.inProgress());
        continue;
      }
      let replay: StoredResponse | null;
      try {
        replay = storedAnswer(w.item.idem, stored.get(index + 1));
      } catch (error) {
        refuse(w, error);
        continue;
      }
      if (replay) {
        answer(w, { ...replay, replayed: true });
        continue;
      }
      // the same new key twice in one batch is a concurrent duplicate: the second runs nothing
      if (seen.has(keyId)) {
        refuse(w, idempotencyErrors.inProgress());
        continue;
      }
      seen.add(keyId);
      const outcome = await this.decide(client, heads, w);
      if (outcome) decided.push(outcome);
    }

    if (decided.length === 0) {
      await client.query('ROLLBACK');
      return;
    }
    // one statement per kind of write, whatever the batch's size: appends, each inline
    // projection's rows, idempotency records; then COMMIT
    const { statements: appended, events } = this.store.prepareAppends(
      decided.flatMap((d) => d.appends.map((request) => ({ request, meta: d.waiting.item.meta }))),
      this.store.clock.now(),
    );
    const tasks = decided.flatMap((d) => d.tasks);
    const audits = decided.flatMap((d) => d.audits);
    const statements = [
      ...appended,
      ...(tasks.length ? [insertTasks(tasks)] : []),
      ...(audits.length ? [stageAuditSql(audits)] : []),
      ...(this.projections ? this.projections.inlineStatements(events) : []),
      recordsSql(
        decided.map((d) => ({
          tenantId: d.waiting.item.meta.tenantId,
          idem: d.waiting.item.idem,
          response: d.response,
        })),
        this.options.idempotencyTtlMs,
      ),
      statement('COMMIT'),
    ];
    const writing = performance.now();
    await pipelined(client, statements);
    observeAppend('batch', events.length, writing);
    for (const d of decided) {
      if (d.committed.length) await this.afterCommit(d.committed);
      answer(d.waiting, { ...d.response, replayed: false });
    }
  }

  /**
   * Runs one command's fn on the batch's heads: its answer and appends, or its refusal (with no
   * appends), or null when the refusal is transient and is answered now without a record.
   * Anything other than a DomainError fails the batch.
   */
  private async decide(client: Tx, heads: BatchHeads, w: WaitingCommand): Promise<Decided | null> {
    const { meta, idem, fn } = w.item;
    const uow = new UnitOfWork(client, meta, this.store, heads, heads.memo);
    try {
      const response = idem.render(await fn(uow));
      const appends = uow.takePending();
      heads.advance(appends);
      return {
        waiting: w,
        response,
        appends,
        tasks: uow.takePendingTasks(),
        audits: uow.takePendingAudits(),
        committed: uow.takeAfterCommit(),
      };
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      const refusal = idem.renderError(error);
      if (!refusal) {
        refuse(w, error);
        return null;
      }
      return { waiting: w, response: refusal, appends: [], tasks: [], audits: [], committed: [] };
    }
  }
}

/**
 * The heads a batch's commands see: those locked at the start, advanced by each decided command's
 * appends. A stream no command named is read and locked when first loaded (outside the ascending
 * order: a deadlock this causes fails the batch, and its commands run alone).
 */
class BatchHeads implements StreamHeads {
  /** lookups shared by the batch's commands (UnitOfWork.once) */
  readonly memo = new Map<string, Promise<unknown>>();

  constructor(
    private readonly tx: Tx,
    private readonly store: EventStore,
    readonly cache: Map<string, StreamHead | null>,
  ) {}

  async head(streamId: string): Promise<StreamHead | null> {
    if (!this.cache.has(streamId)) this.cache.set(streamId, await this.store.head(this.tx, streamId, true));
    return this.cache.get(streamId) ?? null;
  }

  async heads(streamIds: string[]): Promise<Map<string, StreamHead>> {
    const missing = streamIds.filter((id) => !this.cache.has(id));
    if (missing.length > 0) {
      const found = await this.store.heads(this.tx, missing, true);
      for (const id of missing) this.cache.set(id, found.get(id) ?? null);
    }
    const result = new Map<string, StreamHead>();
    for (const id of streamIds) {
      const head = this.cache.get(id);
      if (head) result.set(id, head);
    }
    return result;
  }

  /** the heads after a command's appends; the state goes through JSON as it would through the table */
  advance(appends: AppendRequest[]): void {
    for (const a of appends) {
      if (a.expectedVersion === 'any' || !a.state)
        throw new Error(`a batched command must append to ${a.streamId} at a known version, with its state`);
      this.cache.set(a.streamId, {
        version: a.expectedVersion + a.events.length,
        state: JSON.parse(JSON.stringify(a.state.value, bigintReplacer)),
        stateSchema: a.state.schema,
        // the batch appends in a subtransaction of its own (prepareAppends): no order guard reads this
        orderKey: 0n,
      });
    }
  }
}
