import { platformSourceOf } from '../domain/events/topics';
import { wirePayloadOf } from '../domain/events/platform-events';
import { semverOf, traceIdOf } from '../domain/shared/envelope';
import type { StoredEvent } from '../domain/shared/event';
import { eventRecord } from '../infra/events/envelope';
import { entityIdOf, topicOf } from '../domain/shared/event';
import type { EventStore, LogCheckpoint } from '../infra/eventstore/event-store';
import { checkpointOf, LOG_START } from '../infra/eventstore/event-store';
import type { LogPort, OutgoingRecord } from '../infra/log/port';
import type { Db, Tx } from '../infra/postgres/db';
import type { Logger } from '../infra/observability/logger';
import { withSpan } from '../infra/observability/tracing';
import type { Loop } from './loop';
import { startLoop } from './loop';

export interface RelayOptions {
  batchSize: number;
  idleMs: number;
  name: string;
  /** partitions and retention of a topic the relay meets for the first time */
  topicDefaults: { partitions: number; retentionMs: number };
}

const defaults: RelayOptions = {
  batchSize: 2000,
  idleMs: 20,
  name: 'outbox-relay',
  topicDefaults: { partitions: 3, retentionMs: 168 * 3600_000 },
};

/**
 * The wire form of an event on platform.<domain>.events: the spec's Event (domain/shared/envelope.ts,
 * encoded by infra/events/envelope.ts) — source the service of its domain, schemaVersion as semver,
 * the payload in its wire form (money's amounts JSON integers, meta objects) — keyed by entity; the
 * kernel's provenance (actor, causation, correlation, stream and version) in the headers.
 */
export const toLogRecord = (e: StoredEvent): OutgoingRecord => {
  const topic = topicOf(e.type);
  return eventRecord(
    {
      eventId: e.eventId,
      type: e.type,
      source: platformSourceOf(topic),
      tenantId: e.tenantId,
      traceId: traceIdOf(e),
      timestamp: e.occurredAt,
      schemaVersion: semverOf(e.schemaVersion),
      payload: wirePayloadOf(e.type, e.data),
    },
    entityIdOf(e.streamId),
    {
      ...(e.traceId ? { traceId: e.traceId } : {}),
      ...(e.actorId ? { actorId: e.actorId } : {}),
      ...(e.causationId ? { causationId: e.causationId } : {}),
      ...(e.correlationId ? { correlationId: e.correlationId } : {}),
      streamId: e.streamId,
      streamVersion: String(e.streamVersion),
    },
  );
};

/**
 * Publishes committed events to the log in commit order, at least once: a batch is published,
 * then its checkpoint is advanced. A crash in between republishes the batch (consumers dedupe by
 * eventId); a broker outage makes publish fail and the relay retries the same batch until the log
 * is back, so nothing is skipped. One relay per database publishes at a time (advisory lock).
 */
export class OutboxRelay {
  private readonly options: RelayOptions;
  private loop: Loop | null = null;
  private leader: Tx | null = null;
  private readonly knownTopics = new Set<string>();

  constructor(
    private readonly db: Db,
    private readonly store: EventStore,
    private readonly log: LogPort,
    private readonly logger: Logger,
    options: Partial<RelayOptions> = {},
  ) {
    this.options = { ...defaults, ...options };
  }

  /** publishes one batch; returns how many events it published */
  async runOnce(): Promise<number> {
    const from = await this.checkpoint();
    const events = await this.store.readAll(this.db, from, this.options.batchSize);
    if (events.length === 0) return 0;
    await withSpan('relay.batch', { 'relay.events': events.length }, async () => {
      const byTopic = new Map<string, OutgoingRecord[]>();
      for (const e of events) {
        const topic = topicOf(e.type);
        const records = byTopic.get(topic) ?? [];
        records.push(toLogRecord(e));
        byTopic.set(topic, records);
      }
      // Topics are independent streams; within one, the records keep commit order.
      const unknown = [...byTopic.keys()].filter((t) => !this.knownTopics.has(t));
      if (unknown.length) {
        await this.log.ensureTopics(unknown.map((name) => ({ name, ...this.options.topicDefaults })));
        for (const t of unknown) this.knownTopics.add(t);
      }
      for (const [topic, records] of byTopic) await this.log.publish(topic, records);
      await this.save(checkpointOf(events[events.length - 1]!));
    });
    return events.length;
  }

  start(): void {
    this.loop = startLoop(
      async () => {
        if (!(await this.lead())) return false;
        return (await this.runOnce()) > 0;
      },
      {
        idleMs: this.options.idleMs,
        onError: (error, n) => {
          if (n === 1 || n % 50 === 0)
            this.logger.warn({ err: error, failures: n }, 'outbox relay cannot publish; retrying the same batch');
        },
      },
    );
  }

  async stop(): Promise<void> {
    await this.loop?.stop();
    if (this.leader) {
      await this.leader.query('SELECT pg_advisory_unlock(hashtext($1))', [this.options.name]).catch(() => undefined);
      this.leader.release();
      this.leader = null;
    }
  }

  /** lag of the relay: events committed but not yet published */
  async lag(): Promise<number> {
    return this.store.countAfter(this.db, await this.checkpoint());
  }

  private async lead(): Promise<boolean> {
    if (this.leader) return true;
    const client = await this.db.connect();
    const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [
      this.options.name,
    ]);
    if (rows[0]?.ok) {
      this.leader = client;
      client.on('error', () => {
        this.leader = null;
      });
      return true;
    }
    client.release();
    return false;
  }

  private async checkpoint(): Promise<LogCheckpoint> {
    const { rows } = await this.db.query<{ transaction_id: string; position: string }>(
      'SELECT transaction_id::text AS transaction_id, position FROM es.checkpoints WHERE name = $1',
      [this.options.name],
    );
    const row = rows[0];
    return row ? { transactionId: BigInt(row.transaction_id), position: BigInt(row.position) } : LOG_START;
  }

  private async save(c: LogCheckpoint): Promise<void> {
    await this.db.query(
      `INSERT INTO es.checkpoints (name, transaction_id, position) VALUES ($1, $2::xid8, $3)
       ON CONFLICT (name) DO UPDATE SET transaction_id = EXCLUDED.transaction_id, position = EXCLUDED.position, updated_at = now()`,
      [this.options.name, c.transactionId.toString(), c.position.toString()],
    );
  }
}
