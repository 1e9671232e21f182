import type { NewEvent, StoredEvent } from '../../domain/shared/event';
import { isTypePattern, likeOfType } from '../../domain/shared/event';
import type { Queryable, Tx } from '../postgres/db';
import type { BoundStatement } from '../postgres/inline';
import { statement } from '../postgres/pipeline';
import type { Clock, IdGenerator } from '../runtime/clock';
import { observeAppend } from '../observability/metrics';
import { causingSpanId } from '../observability/tracing';
import { StreamVersionConflict } from './errors';
import { UpcasterRegistry } from './upcasters';

/** Who caused the events, copied into every envelope. */
export interface CausationMeta {
  tenantId: string;
  actorId: string | null;
  traceId: string | null;
  /** the span that caused the events (a sampled one of traceId's trace): the log's readers continue it */
  spanId?: string | null;
  correlationId: string | null;
  causationId: string | null;
}

/** The expected version of a stream: a number (0 = the stream must not exist yet) or 'any'. */
export type ExpectedVersion = number | 'any';

export interface AppendRequest {
  streamId: string;
  expectedVersion: ExpectedVersion;
  events: NewEvent[];
  /** the aggregate state after these events, stored beside the stream (mechanism 2) */
  state?: { value: unknown; schema: string };
}

export interface StreamHead {
  version: number;
  state: unknown;
  stateSchema: string | null;
  /**
   * where the stream's last events stand in the global order: the id of the (sub)transaction that
   * last appended to it. A command that loaded the stream must append above it (causal order).
   */
  orderKey: bigint;
}

/** A position in the global log: commit order is (transactionId, position). */
export interface LogCheckpoint {
  transactionId: bigint;
  position: bigint;
}
export const LOG_START: LogCheckpoint = { transactionId: 0n, position: 0n };

interface EventRow {
  position: string;
  transaction_id: string;
  stream_id: string;
  stream_version: number;
  event_id: string;
  type: string;
  schema_version: number;
  tenant_id: string;
  actor_id: string | null;
  trace_id: string | null;
  span_id: string | null;
  causation_id: string | null;
  correlation_id: string | null;
  occurred_at: Date;
  data: Record<string, unknown>;
}

export interface HeadRow {
  version: number;
  state: unknown;
  state_schema: string | null;
  order_key: string;
}

/**
 * A stream row's columns as a head; its order key is the row's xmin (the (sub)transaction that
 * last appended to it) widened against the snapshot's next id — the row is visible, so that
 * (sub)transaction began before the snapshot, or (read FOR UPDATE after a wait) just after it.
 */
export const HEAD_COLUMNS =
  'version, state, state_schema, es.xid8_near(xmin, pg_snapshot_xmax(pg_current_snapshot()))::text AS order_key';

export const headOf = (row: HeadRow): StreamHead => ({
  version: row.version,
  state: row.state,
  stateSchema: row.state_schema,
  orderKey: BigInt(row.order_key),
});

const EVENT_COLUMNS = `position, transaction_id::text AS transaction_id, stream_id, stream_version, event_id, type, schema_version,
  tenant_id, actor_id, trace_id, span_id, causation_id, correlation_id, occurred_at, data`;

export class EventStore {
  constructor(
    readonly clock: Clock,
    readonly ids: IdGenerator,
    readonly upcasters = new UpcasterRegistry(),
  ) {}

  /**
   * Appends to one stream with a single statement, outside any transaction of the caller (the
   * statement is atomic on its own): one round trip, for writers that need no read or projection
   * in the same transaction.
   */
  async appendOne(
    q: Queryable,
    request: AppendRequest,
    meta: CausationMeta,
  ): Promise<StoredEvent<Record<string, unknown>>[]> {
    return this.append(q as Tx, [request], meta);
  }

  /**
   * Appends events to one or more streams inside the caller's transaction. Each stream's version is
   * checked and advanced with a single guarded statement: concurrent appends at the same expected
   * version serialize on the stream row, and all but the first see a changed version and fail with
   * StreamVersionConflict.
   *
   * Causal order: the events take the transaction's id as their place in the global order, which
   * is only right when that id is above the order keys of everything the command read — the
   * streams it loaded (`dependsOn`, the highest of their StreamHead.orderKey) and the stream it
   * appends to. An id taken by an early write can be older than a commit the command then read;
   * the statement sees it, writes nothing, and the append is made again in a subtransaction, whose
   * fresh id orders the events after everything they depend on (see appendInSubtransaction).
   */
  async append(
    tx: Tx,
    requests: AppendRequest[],
    meta: CausationMeta,
    dependsOn = 0n,
  ): Promise<StoredEvent<Record<string, unknown>>[]> {
    const occurredAt = this.clock.now();
    const started = performance.now();
    const stored: StoredEvent<Record<string, unknown>>[] = [];
    for (const request of requests) {
      if (request.events.length === 0) continue;
      const params = this.appendParams(request, meta, occurredAt);
      // One round trip per stream: the guarded version bump and the insert of its events, as a
      // prepared statement (one per variant and connection): PostgreSQL parses and plans it once per
      // connection instead of once per append — its CPU per single-event append dropped by a third
      // to a half (BENCHMARKS.md, issue 25).
      const variant = variantOf(request.expectedVersion);
      let { rows } = await tx.query<EventRow>({
        name: `es_append_${variant}`,
        text: ADVANCE_IN_ORDER[variant],
        values: [...params, dependsOn.toString()],
      });
      if (rows.length === 0 && (await this.refusedForOrder(tx, request, meta.tenantId)))
        rows = await this.appendInSubtransaction(tx, request, params);
      if (rows.length === 0) {
        const expected =
          request.expectedVersion === 'any' ? 'none' : request.expectedVersion === 0 ? 'none' : request.expectedVersion;
        throw new StreamVersionConflict(
          request.streamId,
          expected,
          (await this.head(tx, request.streamId))?.version ?? null,
        );
      }
      rows.sort((a, b) => a.stream_version - b.stream_version);
      for (const row of rows) stored.push(this.toStored(row));
    }
    if (stored.length) observeAppend('transaction', stored.length, started);
    return stored;
  }

  private appendParams(request: AppendRequest, meta: CausationMeta, occurredAt: Date): unknown[] {
    return [
      request.streamId,
      request.expectedVersion === 'any' ? 0 : request.expectedVersion,
      request.events.length,
      request.state ? JSON.stringify(request.state.value, bigintReplacer) : null,
      request.state?.schema ?? null,
      meta.tenantId,
      meta.actorId,
      meta.traceId,
      meta.causationId,
      meta.correlationId,
      occurredAt,
      request.events.map(() => this.ids.next()),
      request.events.map((e) => e.type),
      request.events.map((e) => this.upcasters.versionOf(e.type)),
      request.events.map((e) => JSON.stringify(e.data, bigintReplacer)),
      spanOf(meta),
    ];
  }

  /**
   * Whether a guarded append that wrote nothing was held back by the order rule rather than by the
   * stream's version (or, for 'any', by another tenant's stream under the same id): the stream is
   * where the request expects it, so only the transaction's id was too old.
   */
  private async refusedForOrder(tx: Tx, request: AppendRequest, tenantId: string): Promise<boolean> {
    const { rows } = await tx.query<{ version: number; tenant_id: string }>(
      'SELECT version, tenant_id FROM es.streams WHERE stream_id = $1',
      [request.streamId],
    );
    const row = rows[0];
    if (request.expectedVersion === 'any') return !row || row.tenant_id === tenantId;
    if (request.expectedVersion === 0) return !row;
    return row?.version === request.expectedVersion && row.tenant_id === tenantId;
  }

  /**
   * The append again, in a subtransaction: its id is assigned by this very statement, after every
   * commit the command read, so it orders the events causally; the events carry it as their
   * transaction_id (readers see them once the whole transaction ended, since a subtransaction's id
   * is above its parent's). Rare: only a transaction that wrote before it read what it appends on.
   */
  private async appendInSubtransaction(tx: Tx, request: AppendRequest, params: unknown[]): Promise<EventRow[]> {
    await tx.query('SAVEPOINT es_causal_order');
    const { rows } = await tx.query<EventRow>(ADVANCE_IN_SUBTRANSACTION[variantOf(request.expectedVersion)], params);
    await tx.query('RELEASE SAVEPOINT es_causal_order');
    return rows;
  }

  /**
   * The appends of several commands as one statement with its values bound (arrays, unnested), for
   * a caller that sends it with other statements (and the COMMIT) in one round trip (pipelined);
   * and the events as they will be stored. Appends to one stream must follow each other (each
   * expects the version the one before left). Unlike append(), a stream that moved is an error, not
   * an empty result: the events are inserted at their versions whatever the stream row says, so a
   * version another transaction took breaks the (stream_id, stream_version) unique constraint, and
   * a stream that already exists breaks the streams' primary key; the transaction then aborts and
   * nothing after the statement runs. position and transactionId are assigned by PostgreSQL:
   * reading them from the returned events throws.
   *
   * The statement runs in a subtransaction of its own (SAVEPOINT … RELEASE, the statements around
   * it), and the events take its id as their transaction_id: an id assigned after everything the
   * callers read (their transactions took locks, claimed rows or wrote before this), so the global
   * order stays causal whatever they wrote first (see append()). Send them inside a transaction
   * block. No statements when there is no event.
   */
  prepareAppends(
    appends: { request: AppendRequest; meta: CausationMeta }[],
    occurredAt: Date,
  ): { statements: BoundStatement[]; events: StoredEvent<Record<string, unknown>>[] } {
    // per stream: the first expected version, the last version and the last state (stringified once, below)
    const streams = new Map<
      string,
      { tenantId: string; expected: number; version: number; state: AppendRequest['state'] }
    >();
    const events: StoredEvent<Record<string, unknown>>[] = [];
    const data: string[] = [];
    for (const { request, meta } of appends) {
      const expected = request.expectedVersion;
      if (expected === 'any') throw new Error('prepareAppends needs expected versions');
      if (request.events.length === 0) continue;
      const known = streams.get(request.streamId);
      if (known && known.version !== expected)
        throw new Error(`appends to ${request.streamId} do not follow each other`);
      const spanId = spanOf(meta);
      streams.set(request.streamId, {
        tenantId: meta.tenantId,
        expected: known?.expected ?? expected,
        version: expected + request.events.length,
        state: request.state,
      });
      request.events.forEach((e, i) => {
        const json = JSON.stringify(e.data, bigintReplacer);
        const event = {
          eventId: this.ids.next(),
          type: e.type,
          schemaVersion: this.upcasters.versionOf(e.type),
          tenantId: meta.tenantId,
          actorId: meta.actorId,
          traceId: meta.traceId,
          spanId,
          causationId: meta.causationId,
          correlationId: meta.correlationId,
          occurredAt: occurredAt.toISOString(),
          streamId: request.streamId,
          streamVersion: expected + i + 1,
          data: JSON.parse(json) as Record<string, unknown>,
        };
        data.push(json);
        events.push(Object.defineProperties(event, UNASSIGNED) as StoredEvent<Record<string, unknown>>);
      });
    }
    if (events.length === 0) return { statements: [], events };
    const heads = [...streams];
    const column = <K extends keyof StoredEvent>(key: K) => events.map((e) => e[key]);
    const append: BoundStatement = {
      name: 'es_appends',
      text: PREPARED_APPENDS,
      values: [
        heads.map(([id]) => id),
        heads.map(([, s]) => s.tenantId),
        heads.map(([, s]) => s.expected),
        heads.map(([, s]) => s.version),
        heads.map(([, s]) => (s.state ? JSON.stringify(s.state.value, bigintReplacer) : null)),
        heads.map(([, s]) => s.state?.schema ?? null),
        occurredAt,
        column('streamId'),
        column('streamVersion'),
        column('eventId'),
        column('type'),
        column('schemaVersion'),
        column('tenantId'),
        column('actorId'),
        column('traceId'),
        column('causationId'),
        column('correlationId'),
        data,
        column('spanId'),
      ],
    };
    return {
      statements: [statement('SAVEPOINT es_causal_order'), append, statement('RELEASE SAVEPOINT es_causal_order')],
      events,
    };
  }

  /** the stream's version and stored state, or null when it does not exist */
  async head(q: Queryable, streamId: string, lock = false): Promise<StreamHead | null> {
    const { rows } = await q.query<HeadRow>(
      `SELECT ${HEAD_COLUMNS} FROM es.streams WHERE stream_id = $1${lock ? ' FOR UPDATE' : ''}`,
      [streamId],
    );
    const row = rows[0];
    return row ? headOf(row) : null;
  }

  /** the heads of several streams, locked in ascending stream id order when lock is set */
  async heads(q: Queryable, streamIds: string[], lock = false): Promise<Map<string, StreamHead>> {
    const { rows } = await q.query<HeadRow & { stream_id: string }>(
      `SELECT stream_id, ${HEAD_COLUMNS} FROM es.streams WHERE stream_id = ANY($1::text[]) ORDER BY stream_id${lock ? ' FOR UPDATE' : ''}`,
      [streamIds],
    );
    return new Map(rows.map((r) => [r.stream_id, headOf(r)]));
  }

  async readStream(q: Queryable, streamId: string, fromVersion = 1): Promise<StoredEvent<Record<string, unknown>>[]> {
    const { rows } = await q.query<EventRow>(
      `SELECT ${EVENT_COLUMNS} FROM es.events WHERE stream_id = $1 AND stream_version >= $2 ORDER BY stream_version`,
      [streamId, fromVersion],
    );
    return rows.map((row) => this.toStored(row));
  }

  /**
   * Reads the global log after a checkpoint, in commit order, without gaps: only events of
   * transactions older than every transaction still running are visible, so an event that commits
   * late can never appear behind a checkpoint that a reader already passed (mechanism 1).
   * `allCommitted` drops that rule: only for callers that hold appends out (a SHARE lock on
   * es.events), when no transaction can commit behind them.
   */
  async readAll(
    q: Queryable,
    after: LogCheckpoint,
    limit: number,
    filter: { tenantId?: string; types?: readonly string[]; allCommitted?: boolean } = {},
  ): Promise<StoredEvent<Record<string, unknown>>[]> {
    const params: unknown[] = [after.transactionId.toString(), after.position.toString(), limit];
    let where = filter.allCommitted ? '' : ' AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())';
    if (filter.tenantId) {
      params.push(filter.tenantId);
      where += ` AND tenant_id = $${params.length}`;
    }
    if (filter.types && !filter.types.includes('*')) {
      // a pattern (data.*.*.created) is a first cut in SQL; the caller keeps what it handles
      const exact = filter.types.filter((t) => !isTypePattern(t));
      const patterns = filter.types.filter(isTypePattern).map(likeOfType);
      params.push(exact);
      where += ` AND (type = ANY($${params.length}::text[])`;
      params.push(patterns);
      where += ` OR type LIKE ANY($${params.length}::text[]))`;
    }
    // ORDER BY names the table's columns: a bare transaction_id would be the text output column of
    // EVENT_COLUMNS, ordering 10,000,000 before 9,999,999 (and sorting every row after the checkpoint)
    const { rows } = await q.query<EventRow>(
      `SELECT ${EVENT_COLUMNS} FROM es.events
       WHERE (transaction_id, position) > ($1::xid8, $2::bigint)${where}
       ORDER BY events.transaction_id, events.position LIMIT $3`,
      params,
    );
    return rows.map((row) => this.toStored(row));
  }

  /** the checkpoint of the newest event visible to readAll: the head of the global log */
  async headCheckpoint(q: Queryable): Promise<LogCheckpoint> {
    const { rows } = await q.query<{ transaction_id: string; position: string }>(
      `SELECT transaction_id::text AS transaction_id, position FROM es.events
       WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())
       ORDER BY events.transaction_id DESC, events.position DESC LIMIT 1`,
    );
    const row = rows[0];
    return row ? { transactionId: BigInt(row.transaction_id), position: BigInt(row.position) } : LOG_START;
  }

  /** number of visible events after a checkpoint (lag) */
  async countAfter(q: Queryable, after: LogCheckpoint): Promise<number> {
    const { rows } = await q.query<{ n: string }>(
      `SELECT count(*) AS n FROM es.events WHERE (transaction_id, position) > ($1::xid8, $2::bigint)
         AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())`,
      [after.transactionId.toString(), after.position.toString()],
    );
    return Number(rows[0]?.n ?? 0);
  }

  toStored(row: EventRow): StoredEvent<Record<string, unknown>> {
    const { version, data } = this.upcasters.upcast(row.type, row.schema_version, row.data);
    return {
      eventId: row.event_id,
      type: row.type,
      schemaVersion: version,
      tenantId: row.tenant_id,
      actorId: row.actor_id,
      traceId: row.trace_id,
      spanId: row.span_id,
      causationId: row.causation_id,
      correlationId: row.correlation_id,
      occurredAt: row.occurred_at.toISOString(),
      streamId: row.stream_id,
      streamVersion: row.stream_version,
      position: BigInt(row.position),
      transactionId: BigInt(row.transaction_id),
      data,
    };
  }
}

/**
 * The append statements for one stream: a CTE advances the stream row only when its version is the
 * expected one (or creates it, for 0), and the events are inserted only when it did. No row back
 * means a conflict — or, in order, an order key too old. $1 stream, $2 expected, $3 count, $4 state,
 * $5 state schema, $6 tenant, $7-$11 envelope, $12-$15 per-event arrays, $16 the causing span. ($2 * 0 keeps $2 typed in
 * the variants that do not compare versions, so all take the same parameter list.)
 *
 * In order (the common path), $17 is the highest order key of the streams the command loaded: the
 * row is advanced only when the transaction's id (pg_current_xact_id(), which the events take by
 * default) is not below it, nor below the order key of the row itself (its xmin: the
 * (sub)transaction that last appended to it, this one included). The id is taken by this
 * statement when the transaction has none yet, and is then above every commit the command read.
 *
 * In a subtransaction (appendInSubtransaction), the stream row is written first, by a fresh
 * subtransaction id, and the events take that id (the row's new xmin) as their transaction_id.
 */
const insertEvents = (
  orderKey: string,
) => `INSERT INTO es.events (stream_id, stream_version, event_id, type, schema_version, tenant_id, actor_id, trace_id, span_id, causation_id, correlation_id, occurred_at, data, transaction_id)
  SELECT $1, s.base + x.ord, x.e, x.t, x.sv, $6, $7, $8, $16, $9, $10, $11, x.d::jsonb, ${orderKey}
  FROM s, unnest($12::uuid[], $13::text[], $14::int[], $15::text[]) WITH ORDINALITY AS x(e, t, sv, d, ord)
  RETURNING ${EVENT_COLUMNS}`;

/** the transaction's id is at or above the loaded streams' order keys */
const ABOVE_LOADED = '$17::xid8 <= pg_current_xact_id()';
/** the transaction's id is at or above the stream row's own order key */
const ABOVE_ROW = (row: string) => `es.xid8_near(${row}.xmin, pg_current_xact_id()) <= pg_current_xact_id()`;

const ADVANCE_IN_ORDER = {
  none: `WITH s AS (INSERT INTO es.streams (stream_id, tenant_id, version, state, state_schema) SELECT $1, $6, $3 + $2 * 0, $4::jsonb, $5
           WHERE ${ABOVE_LOADED}
           ON CONFLICT (stream_id) DO NOTHING RETURNING 0 AS base) ${insertEvents('pg_current_xact_id()')}`,
  any: `WITH s AS (INSERT INTO es.streams (stream_id, tenant_id, version, state, state_schema) SELECT $1, $6, $3 + $2 * 0, $4::jsonb, $5
          WHERE ${ABOVE_LOADED}
          ON CONFLICT (stream_id) DO UPDATE SET version = es.streams.version + EXCLUDED.version, state = COALESCE(EXCLUDED.state, es.streams.state),
            state_schema = COALESCE(EXCLUDED.state_schema, es.streams.state_schema), updated_at = now()
          WHERE es.streams.tenant_id = $6 AND ${ABOVE_ROW('es.streams')}
          RETURNING version - $3 AS base) ${insertEvents('pg_current_xact_id()')}`,
  version: `WITH s AS (UPDATE es.streams SET version = version + $3, state = $4::jsonb, state_schema = $5, updated_at = now()
              WHERE stream_id = $1 AND version = $2 AND tenant_id = $6 AND ${ABOVE_LOADED} AND ${ABOVE_ROW('es.streams')}
              RETURNING version - $3 AS base) ${insertEvents('pg_current_xact_id()')}`,
};

const SUBTRANSACTION_KEY = 'es.xid8_near(s.x, pg_current_xact_id())';
const ADVANCE_IN_SUBTRANSACTION = {
  none: `WITH s AS (INSERT INTO es.streams (stream_id, tenant_id, version, state, state_schema) VALUES ($1, $6, $3 + $2 * 0, $4::jsonb, $5)
           ON CONFLICT (stream_id) DO NOTHING RETURNING 0 AS base, xmin AS x) ${insertEvents(SUBTRANSACTION_KEY)}`,
  any: `WITH s AS (INSERT INTO es.streams (stream_id, tenant_id, version, state, state_schema) VALUES ($1, $6, $3 + $2 * 0, $4::jsonb, $5)
          ON CONFLICT (stream_id) DO UPDATE SET version = es.streams.version + EXCLUDED.version, state = COALESCE(EXCLUDED.state, es.streams.state),
            state_schema = COALESCE(EXCLUDED.state_schema, es.streams.state_schema), updated_at = now()
          WHERE es.streams.tenant_id = $6
          RETURNING version - $3 AS base, xmin AS x) ${insertEvents(SUBTRANSACTION_KEY)}`,
  version: `WITH s AS (UPDATE es.streams SET version = version + $3, state = $4::jsonb, state_schema = $5, updated_at = now()
              WHERE stream_id = $1 AND version = $2 AND tenant_id = $6 RETURNING version - $3 AS base, xmin AS x) ${insertEvents(SUBTRANSACTION_KEY)}`,
};

/**
 * The batch's appends (prepareAppends): $1-$6 per stream (id, tenant, first expected version, last
 * version, state, state schema), $7 the time, $8-$18 per event. Streams expected at a version are
 * advanced only from it; streams expected at 0 are created. The events take the id of the
 * subtransaction that wrote the stream rows (read from a row's xmin); when every stream moved (no
 * row written) the unique constraint refuses the events anyway, so any id does.
 */
const PREPARED_APPENDS = `WITH v AS (SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::int[], $5::text[], $6::text[])
        AS v(stream_id, tenant_id, expected, version, state, schema)),
  advanced AS (UPDATE es.streams s SET version = v.version, state = v.state::jsonb, state_schema = v.schema, updated_at = now()
        FROM v WHERE v.expected > 0 AND s.stream_id = v.stream_id AND s.tenant_id = v.tenant_id AND s.version = v.expected
        RETURNING s.xmin AS x),
  created AS (INSERT INTO es.streams (stream_id, tenant_id, version, state, state_schema)
        SELECT stream_id, tenant_id, version, state::jsonb, schema FROM v WHERE expected = 0 RETURNING xmin AS x),
  ordered AS (SELECT COALESCE((SELECT es.xid8_near(x, pg_current_xact_id())
        FROM (SELECT x FROM advanced UNION ALL SELECT x FROM created) w LIMIT 1), pg_current_xact_id()) AS k)
INSERT INTO es.events (stream_id, stream_version, event_id, type, schema_version, tenant_id, actor_id, trace_id, span_id, causation_id, correlation_id, occurred_at, data, transaction_id)
  SELECT e.stream_id, e.stream_version, e.event_id, e.type, e.schema_version, e.tenant_id, e.actor_id, e.trace_id, e.span_id, e.causation_id,
         e.correlation_id, $7::timestamptz, e.data::jsonb, ordered.k
    FROM unnest($8::text[], $9::int[], $10::uuid[], $11::text[], $12::int[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[], $18::text[], $19::text[])
      AS e(stream_id, stream_version, event_id, type, schema_version, tenant_id, actor_id, trace_id, causation_id, correlation_id, data, span_id),
    ordered`;

/** the span that caused the events: the one the meta names, else the active span of its trace (causingSpanId) */
const spanOf = (meta: CausationMeta): string | null =>
  meta.spanId !== undefined ? meta.spanId : causingSpanId(meta.traceId);

const variantOf = (expected: ExpectedVersion): 'none' | 'any' | 'version' =>
  expected === 'any' ? 'any' : expected === 0 ? 'none' : 'version';

const unassigned = (field: string) => ({
  get(): never {
    throw new Error(`${field} is assigned by PostgreSQL when the event is inserted; it is not known before`);
  },
});
const UNASSIGNED = { position: unassigned('position'), transactionId: unassigned('transactionId') };

export const checkpointOf = (event: Pick<StoredEvent, 'transactionId' | 'position'>): LogCheckpoint => ({
  transactionId: event.transactionId,
  position: event.position,
});

/** JSON has no bigint; amounts and counters travel as decimal strings. */
export const bigintReplacer = (_key: string, value: unknown): unknown =>
  typeof value === 'bigint' ? value.toString() : value;
