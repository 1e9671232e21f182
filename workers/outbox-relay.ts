import { platformSourceOf } from '../domain/events/topics';
import { wirePayloadOf } from '../domain/events/platform-events';
import { semverOf, traceIdOf } from '../domain/shared/envelope';
import type { StoredEvent } from '../domain/shared/event';
import { eventRecord } from '../infra/events/envelope';
import { entityIdOf, topicOf } from '../domain/shared/event';
import type { EventStore, LogCheckpoint } from '../infra/eventstore/event-store';
import { checkpointOf, LOG_START } from '../infra/eventstore/event-store';
import type { LogPort, OutgoingRecord } from '../infra/log/port';
import type { Db } from '../infra/postgres/db';
import type { Logger } from '../infra/observability/logger';
import type { RelaySource } from './relay';
import { Relay } from './relay';

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
      ...(e.traceId && e.spanId ? { spanId: e.spanId } : {}),
      ...(e.actorId ? { actorId: e.actorId } : {}),
      ...(e.causationId ? { causationId: e.causationId } : {}),
      ...(e.correlationId ? { correlationId: e.correlationId } : {}),
      streamId: e.streamId,
      streamVersion: String(e.streamVersion),
    },
  );
};

/**
 * The event store as a relay source: the global log in its causal order — (transaction_id,
 * position) below pg_snapshot_xmin (store.readAll; docs/decisions.md "Causal order"), so each
 * stream's events in version order and none skipped — after the relay's checkpoint (es.checkpoints,
 * the row of its name), which a published batch advances. Each event goes to
 * platform.<domain>.events keyed by its entity.
 */
const eventStoreSource = (db: Db, store: EventStore, options: RelayOptions) => {
  const checkpoint = async (): Promise<LogCheckpoint> => {
    const { rows } = await db.query<{ transaction_id: string; position: string }>(
      'SELECT transaction_id::text AS transaction_id, position FROM es.checkpoints WHERE name = $1',
      [options.name],
    );
    const row = rows[0];
    return row ? { transactionId: BigInt(row.transaction_id), position: BigInt(row.position) } : LOG_START;
  };
  const source: RelaySource<StoredEvent> = {
    name: options.name,
    read: async (limit) => store.readAll(db, await checkpoint(), limit),
    readAfter: (last, limit) => store.readAll(db, checkpointOf(last), limit),
    traceOf: (e) => e,
    recordOf: (e) => ({ topic: topicOf(e.type), record: toLogRecord(e) }),
    topicSpec: (name) => ({ name, ...options.topicDefaults }),
    async done(events) {
      const c = checkpointOf(events[events.length - 1]!);
      await db.query(
        `INSERT INTO es.checkpoints (name, transaction_id, position) VALUES ($1, $2::xid8, $3)
         ON CONFLICT (name) DO UPDATE SET transaction_id = EXCLUDED.transaction_id, position = EXCLUDED.position, updated_at = now()`,
        [options.name, c.transactionId.toString(), c.position.toString()],
      );
    },
  };
  return { source, lag: async () => store.countAfter(db, await checkpoint()) };
};

/**
 * The outbox relay: publishes every committed event to the log in the event store's causal order,
 * at least once (the relay core: workers/relay.ts).
 */
export class OutboxRelay extends Relay<StoredEvent> {
  /** lag of the relay: events committed but not yet published */
  readonly lag: () => Promise<number>;

  constructor(db: Db, store: EventStore, log: LogPort, logger: Logger, options: Partial<RelayOptions> = {}) {
    const o = { ...defaults, ...options };
    const { source, lag } = eventStoreSource(db, store, o);
    super(db, log, logger, source, {
      batchSize: o.batchSize,
      idleMs: o.idleMs,
      failure: { message: 'outbox relay cannot publish; retrying the same batch', every: 50 },
    });
    this.lag = lag;
  }
}
