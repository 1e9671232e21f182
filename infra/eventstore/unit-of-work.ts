import type { NewEvent, StoredEvent } from '../../domain/shared/event';
import { fold } from '../../domain/shared/decider';
import type { Tx } from '../postgres/db';
import { withSpan } from '../observability/tracing';
import type { ProjectionEngine } from '../projections/engine';
import type { OutgoingRecord } from '../log/port';
import { stageAudit } from '../audit';
import type { PendingTask, TaskRequest } from '../tasks';
import { DEFAULT_TASK_ATTEMPTS, TASK_TYPE, writeTasks } from '../tasks';
import type { AggregateType } from './aggregate';
import type { AppendRequest, CausationMeta, EventStore, StreamHead } from './event-store';

/** where a unit of work reads stream heads: the store, or a batch's heads (see command-batch.ts) */
export interface StreamHeads {
  head(streamId: string, lock: boolean): Promise<StreamHead | null>;
  heads(streamIds: string[], lock: boolean): Promise<Map<string, StreamHead>>;
}

const storeHeads = (store: EventStore, tx: Tx): StreamHeads => ({
  head: (streamId, lock) => store.head(tx, streamId, lock),
  heads: (streamIds, lock) => store.heads(tx, streamIds, lock),
});

/**
 * The highest order key among the streams loaded in one transaction (by all its units of work):
 * the transaction's events must come after it in the global order (EventStore.append).
 */
export class LoadedOrder {
  key = 0n;

  see(head: StreamHead): void {
    if (head.orderKey > this.key) this.key = head.orderKey;
  }
}

export interface Loaded<S> {
  streamId: string;
  state: S;
  /** 0 when the stream does not exist */
  version: number;
}

/**
 * One command's transaction: load aggregates, record their new events, then commit events, stored
 * states, inline projections and the idempotency record together.
 */
export class UnitOfWork {
  private readonly pending: AppendRequest[] = [];
  private appended: StoredEvent<Record<string, unknown>>[] = [];
  private readonly committed: (() => Promise<void>)[] = [];
  private readonly tasks: PendingTask[] = [];
  private readonly audits: OutgoingRecord[] = [];

  constructor(
    readonly tx: Tx,
    readonly meta: CausationMeta,
    private readonly store: EventStore,
    private readonly source: StreamHeads = storeHeads(store, tx),
    private readonly memo = new Map<string, Promise<unknown>>(),
    private readonly loadedOrder = new LoadedOrder(),
  ) {}

  /**
   * A second unit of work in the same transaction whose events carry another envelope (identity's
   * account events live in the platform tenant while the command runs in a tenant): it shares the
   * heads, the lookups and what was loaded, so its events too come after everything the command read.
   */
  sibling(meta: CausationMeta): UnitOfWork {
    return new UnitOfWork(this.tx, meta, this.store, this.source, this.memo, this.loadedOrder);
  }

  /**
   * The value of fn, computed once per transaction under this key: the commands of a batch share
   * one transaction, so a lookup they all need (a tenant's plan limits) is made once per batch.
   */
  once<T>(key: string, fn: () => Promise<T>): Promise<T> {
    let value = this.memo.get(key) as Promise<T> | undefined;
    if (!value) {
      value = fn();
      this.memo.set(key, value);
      // a failed lookup is not remembered: the next command asks again
      value.catch(() => this.memo.delete(key));
    }
    return value;
  }

  /**
   * Loads an aggregate from its stored state (one row), falling back to folding its events when
   * there is no stored state of the current shape. `lock` takes the stream row for update, for
   * commands that must serialize on it (money), at the cost of waiting instead of retrying.
   */
  async load<S, C, E extends NewEvent>(
    type: AggregateType<S, C, E>,
    streamId: string,
    options: { lock?: boolean } = {},
  ): Promise<Loaded<S>> {
    const head = await this.source.head(streamId, options.lock ?? false);
    if (!head) return { streamId, state: type.decider.initialState(), version: 0 };
    this.loadedOrder.see(head);
    if (head.stateSchema === type.stateSchema && head.state !== null) {
      return { streamId, state: type.decode ? type.decode(head.state) : (head.state as S), version: head.version };
    }
    const events = await this.store.readStream(this.tx, streamId);
    const toEvent = type.toEvent ?? ((e: { type: string; data: Record<string, unknown> }) => e as unknown as E);
    return {
      streamId,
      state: fold(
        type.decider,
        events.map((e) => toEvent({ type: e.type, data: e.data })),
      ),
      version: head.version,
    };
  }

  /**
   * A stream the command creates under an id it has just minted (a UUID v7): there is nothing to
   * read, so nothing is. Its append still expects version 0: a stream that existed after all is a
   * version conflict, and the command is retried (with a new id).
   */
  fresh<S, C, E extends NewEvent>(type: AggregateType<S, C, E>, streamId: string): Loaded<S> {
    return { streamId, state: type.decider.initialState(), version: 0 };
  }

  /**
   * Loads several aggregates of one type with one query; with lock, their stream rows are locked
   * in ascending stream id order (the sort runs below the row locks), so two commands that lock
   * the same streams never wait on each other in a cycle. Missing streams load as initial state.
   */
  async loadMany<S, C, E extends NewEvent>(
    type: AggregateType<S, C, E>,
    streamIds: string[],
    options: { lock?: boolean } = {},
  ): Promise<Map<string, Loaded<S>>> {
    const ids = [...new Set(streamIds)].sort();
    const heads = await this.source.heads(ids, options.lock ?? false);
    for (const head of heads.values()) this.loadedOrder.see(head);
    const loaded = new Map<string, Loaded<S>>();
    for (const streamId of ids) {
      const head = heads.get(streamId);
      loaded.set(
        streamId,
        head && head.stateSchema === type.stateSchema && head.state !== null
          ? { streamId, state: type.decode ? type.decode(head.state) : (head.state as S), version: head.version }
          : await this.load(type, streamId),
      );
    }
    return loaded;
  }

  /**
   * Decides a command against a loaded aggregate and records the resulting events; returns them.
   * `loaded.state` moves on to the new state, so several commands decided on one aggregate in a
   * unit of work see each other's effects and are appended together, as one expected version.
   */
  decide<S, C, E extends NewEvent>(
    type: AggregateType<S, C, E>,
    loaded: Loaded<S>,
    command: C,
  ): { events: E[]; state: S } {
    const events = type.decider.decide(command, loaded.state);
    const state = fold(type.decider, events, loaded.state);
    this.record(type, loaded, events, state);
    loaded.state = state;
    return { events, state };
  }

  /** records events of a loaded aggregate; a second record of the same stream extends the first append */
  record<S, C, E extends NewEvent>(type: AggregateType<S, C, E>, loaded: Loaded<S>, events: E[], state: S): void {
    if (events.length === 0) return;
    const encoded = { value: type.encode ? type.encode(state) : state, schema: type.stateSchema };
    const index = this.pending.findIndex((r) => r.streamId === loaded.streamId);
    const earlier = this.pending[index];
    if (earlier) this.pending[index] = { ...earlier, events: [...earlier.events, ...events], state: encoded };
    else this.pending.push({ streamId: loaded.streamId, expectedVersion: loaded.version, events, state: encoded });
  }

  /**
   * Runs fn once the command's transaction has committed, before the command answers: for effects
   * beyond the database that must follow the commit and precede the answer (an access change bumps
   * the shared cache epoch, so the caller's very next request sees it). Never runs when the command
   * is refused, rolled back or retried (a retry runs a new unit of work). A failure of fn is the
   * runner's to log, not the command's: what it followed is already committed.
   */
  afterCommit(fn: () => Promise<void>): void {
    this.committed.push(fn);
  }

  /** the afterCommit callbacks, handed over to the runner that commits */
  takeAfterCommit(): (() => Promise<void>)[] {
    return this.committed.splice(0);
  }

  /**
   * Queues a task in this command's transaction (infra/tasks.ts): it is written with the events, so
   * it exists exactly when the command commits, and a worker runs it afterwards, at least once.
   * Returns the task's id.
   */
  enqueueTask(task: TaskRequest): string {
    if (!TASK_TYPE.test(task.type)) throw new Error(`task type ${task.type} is not a dotted lowercase name`);
    const now = this.store.clock.now();
    const id = this.store.ids.next();
    this.tasks.push({
      id,
      tenantId: this.meta.tenantId,
      type: task.type,
      payload: task.payload,
      runAt: task.runAt ?? now,
      maxAttempts: task.maxAttempts ?? DEFAULT_TASK_ATTEMPTS,
      traceId: this.meta.traceId,
      createdAt: now,
    });
    return id;
  }

  /**
   * An audit record (infra/audit.ts auditRecord) committed with this command: staged in the audit
   * outbox in its transaction, so it exists exactly when the command commits — a crash after the
   * commit cannot lose it (the audit relay publishes it).
   */
  audit(record: OutgoingRecord): void {
    this.audits.push(record);
  }

  /** the audit records not written yet, handed over to a caller that writes them itself (a batch) */
  takePendingAudits(): OutgoingRecord[] {
    return this.audits.splice(0);
  }

  /** the tasks queued and not written yet, handed over to a caller that writes them itself (a batch) */
  takePendingTasks(): PendingTask[] {
    return this.tasks.splice(0);
  }

  /** events appended so far by flush() */
  get events(): StoredEvent<Record<string, unknown>>[] {
    return this.appended;
  }

  /** the appends recorded and not flushed yet, handed over to a caller that writes them itself */
  takePending(): AppendRequest[] {
    return this.pending.splice(0);
  }

  async flush(projections: ProjectionEngine | null): Promise<StoredEvent<Record<string, unknown>>[]> {
    if (this.tasks.length > 0) await writeTasks(this.tx, this.tasks.splice(0));
    if (this.audits.length > 0) await stageAudit(this.tx, this.audits.splice(0));
    if (this.pending.length === 0) return [];
    const requests = this.pending.splice(0);
    const stored = await withSpan(
      'eventstore.append',
      { streams: requests.length, events: requests.reduce((n, r) => n + r.events.length, 0) },
      () => this.store.append(this.tx, requests, this.meta, this.loadedOrder.key),
    );
    if (projections) await projections.applyInline(this.tx, stored);
    this.appended = [...this.appended, ...stored];
    return stored;
  }
}
