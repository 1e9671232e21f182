import pg from 'pg';
import type { LogPort, OutgoingRecord, TopicSpec } from '../infra/log/port';
import type { Db } from '../infra/postgres/db';
import { sessionClient } from '../infra/postgres/db';
import type { Logger } from '../infra/observability/logger';
import { continueTraces, type TracedItem } from '../infra/observability/tracing';
import { relayBatchDuration, relayFailures, relayPublished } from '../infra/observability/metrics';
import type { Loop } from './loop';
import { startLoop } from './loop';

/** a source whose items name no trace (the audit outbox) */
const untraced = (): TracedItem => ({});

/**
 * What a relay publishes: a table of records committed with the operations that wrote them (the
 * event store's es.events, the bus's events.outbox, audit.outbox). The source decides the order —
 * read() returns the next items in publish order and never skips one that a running transaction
 * may still commit — and how a published batch is done: a checkpoint advanced or the rows deleted.
 */
export interface RelaySource<Item> {
  /** the session advisory lock that makes one relay of this source per database publish at a time */
  readonly name: string;
  /** the next items in publish order after those already done, at most limit */
  read(limit: number): Promise<Item[]>;
  /**
   * the items that follow `last` (read, not yet done), at most limit: a source that can say so has
   * its next batch read while the current one publishes (the event store: its checkpoint is a position)
   */
  readonly readAfter?: (last: Item, limit: number) => Promise<Item[]>;
  /** the topic and the log record of an item; one key's items keep their order on the topic */
  recordOf(item: Item): { topic: string; record: OutgoingRecord };
  /** partitions and retention of a topic the relay meets for the first time (absent: created at start) */
  readonly topicSpec?: (topic: string) => TopicSpec;
  /** the trace an item continues (the event store's events: the request that appended them) */
  readonly traceOf?: (item: Item) => TracedItem;
  /** called once the batch is on the log, never before: advance the checkpoint, delete the rows */
  done(items: Item[]): Promise<void>;
}

export interface RelayOptions {
  batchSize: number;
  /** the pause after a look that found nothing (or, with `again: 'after a full batch'`, less than a full batch) */
  idleMs: number;
  /**
   * when the relay reads again at once instead of pausing idleMs: after any published batch
   * (default), or only after a full one — the audit outbox, whose records arrive one by one, is
   * read every idleMs and so published in batches rather than a publish per record
   */
  again?: 'after any batch' | 'after a full batch';
  /** the longest pause while publishing fails (the loop backs off from idleMs) */
  maxBackoffMs?: number;
  /** a publish not finished by then counts as failed, and the same batch is published again */
  publishTimeoutMs?: number;
  /** the warning logged on the first failure in a row and on every `every`-th */
  failure: { message: string; every: number };
  /** the debug line of a published batch (none: no line) */
  published?: string;
}

/**
 * The one relay: publishes a source's records to the log at least once, in the source's order. A
 * batch is read, published to all its topics at once (each topic's records in batch order, so one
 * key keeps its order), and only then done; a crash in between publishes the batch again and consumers
 * deduplicate by eventId. While the log refuses, the same batch is retried with backoff, so nothing
 * is skipped. No transaction stays open across the publish (it would hold back pg_snapshot_xmin for
 * every reader of the global log): one relay per source and database works at a time by a session
 * advisory lock held on a connection of its own, which takes no transaction id; other processes
 * stand by. That connection is not the pool's: held for the relay's whole life, it would take a
 * pooled connection from every request and worker of the process (a pool of one would deadlock:
 * the lock held, every read waiting for the pool); the log's group sessions keep theirs out of the
 * pool for the same reason.
 */
export class Relay<Item> {
  private loop: Loop | null = null;
  private leader: pg.Client | null = null;
  private readonly knownTopics = new Set<string>();
  /** the batch after the one publishing, read meanwhile; dropped when that one fails or leadership lapses */
  private readAhead: Promise<Item[]> | null = null;

  constructor(
    private readonly db: Db,
    private readonly log: LogPort,
    private readonly logger: Logger,
    private readonly source: RelaySource<Item>,
    private readonly options: RelayOptions,
  ) {}

  /** publishes one batch; returns how many records it published */
  async runOnce(): Promise<number> {
    const { batchSize } = this.options;
    const items = await this.nextBatch();
    if (items.length === 0) return 0;
    // a full batch has more behind it: read that while this one publishes (PostgreSQL and the log
    // work at once); it is used only once this batch is done, so the order and the checkpoint hold
    const { readAfter } = this.source;
    if (readAfter && items.length === batchSize) {
      this.readAhead = readAfter(items[items.length - 1]!, batchSize);
      this.readAhead.catch(() => undefined); // its failure is met (and the batch read again) by the next turn
    }
    const started = performance.now();
    try {
      await this.publishAndFinish(items);
    } catch (error) {
      this.readAhead = null;
      throw error;
    }
    relayBatchDuration.labels(this.source.name).observe((performance.now() - started) / 1000);
    relayPublished.labels(this.source.name).inc(items.length);
    if (this.options.published) this.logger.debug({ relayed: items.length }, this.options.published);
    return items.length;
  }

  /** the batch read ahead when there is one (and it was read), else the next after those done */
  private async nextBatch(): Promise<Item[]> {
    const ahead = this.readAhead;
    this.readAhead = null;
    const items = ahead && (await ahead.catch(() => null));
    return items ?? this.source.read(this.options.batchSize);
  }

  private async publishAndFinish(items: Item[]): Promise<void> {
    const attributes = { 'relay.events': items.length, 'relay.source': this.source.name };
    const names = { batch: 'relay.batch', each: 'relay.publish' };
    await continueTraces(names, items, this.source.traceOf ?? untraced, attributes, async () => {
      const byTopic = new Map<string, OutgoingRecord[]>();
      for (const item of items) {
        const { topic, record } = this.source.recordOf(item);
        const records = byTopic.get(topic) ?? [];
        records.push(record);
        byTopic.set(topic, records);
      }
      // Topics are independent streams; within one, the records keep the source's order.
      const { topicSpec } = this.source;
      const unknown = [...byTopic.keys()].filter((t) => !this.knownTopics.has(t));
      if (topicSpec && unknown.length) {
        await this.log.ensureTopics(unknown.map((t) => topicSpec(t)));
        for (const t of unknown) this.knownTopics.add(t);
      }
      // together: each topic in one publish call keeps its records' order; a failure in any retries the whole batch
      await Promise.all([...byTopic].map(([topic, records]) => this.publish(topic, records)));
      await this.source.done(items);
    });
  }

  start(): this {
    const { failure, batchSize } = this.options;
    const full = this.options.again === 'after a full batch';
    this.loop = startLoop(async () => (await this.lead()) && (await this.runOnce()) >= (full ? batchSize : 1), {
      idleMs: this.options.idleMs,
      maxBackoffMs: this.options.maxBackoffMs,
      onError: (error, n) => {
        relayFailures.labels(this.source.name).inc();
        if (n === 1 || n % failure.every === 0) this.logger.warn({ err: error, failures: n }, failure.message);
      },
    });
    return this;
  }

  async stop(): Promise<void> {
    await this.loop?.stop();
    const leader = this.leader;
    this.leader = null;
    // closing the session frees its lock; the unlock first lets a standby take over without waiting for the close
    await leader?.query('SELECT pg_advisory_unlock(hashtext($1))', [this.source.name]).catch(() => undefined);
    await leader?.end().catch(() => undefined);
  }

  /** takes the source's lock, or tells that another relay holds it */
  async lead(): Promise<boolean> {
    if (this.leader) return true;
    // read while leading; another relay may have published past it since
    this.readAhead = null;
    const client = sessionClient(this.db, 'relay-leader');
    // a lost session has lost its lock: lead again (another relay may have taken it meanwhile)
    client.on('error', () => {
      if (this.leader === client) this.leader = null;
      void client.end().catch(() => undefined);
    });
    try {
      await client.connect();
      const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [
        this.source.name,
      ]);
      if (rows[0]?.ok) {
        this.leader = client;
        return true;
      }
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    await client.end().catch(() => undefined);
    return false;
  }

  private async publish(topic: string, records: OutgoingRecord[]): Promise<void> {
    const ms = this.options.publishTimeoutMs;
    if (ms === undefined) return this.log.publish(topic, records);
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.log.publish(topic, records),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`publish took over ${ms} ms`)), ms);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }
}
