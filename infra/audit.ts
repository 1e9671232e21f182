import type { Db, Queryable } from './postgres/db';
import { commonErrors } from '../domain/shared/errors';
import type { Logger } from './observability/logger';
import { traceIdOf } from '../domain/shared/envelope';
import { eventRecord } from './events/envelope';
import type { LogPort, OutgoingRecord } from './log/port';
import type { IdGenerator } from './runtime/clock';

/**
 * The audit write pipeline (spec 002: asynchronous and never lost): a record is durable before
 * anyone acknowledges it — staged in the audit outbox (audit.outbox) in the transaction of the
 * business operation it belongs to, or, for records acknowledged over HTTP, published onto
 * platform.audit.events (or staged in the outbox while the log is down) before the answer. The
 * audit relay publishes the outbox and deletes what it published.
 */
export const AUDIT_TOPIC = 'platform.audit.events';
export const AUDIT_RECORD_CREATED = 'audit.record.created';

/** what the recorder needs of the kernel */
export interface AuditKernel {
  db: Db;
  log: LogPort;
  logger: Logger;
  ids: IdGenerator;
}

/** spec 002 "Audit record": who did what to which entity, injected by the service, never by clients */
export interface AuditAction {
  action: string;
  entityType: string;
  entityId: string;
  tenantId: string;
  actorId: string;
  actorIp?: string | null;
  actorUserAgent?: string | null;
  before?: Record<string, unknown> | null;
  after?: Record<string, unknown> | null;
  meta?: Record<string, unknown> | null;
  traceId?: string | null;
  timestamp: string;
}

/** an audit record as an audit.record.created event, keyed by entity so one entity's history keeps its order */
export const auditRecord = (a: AuditAction, id: string): OutgoingRecord => {
  const data = {
    id,
    action: a.action,
    entityType: a.entityType,
    entityId: a.entityId,
    actorId: a.actorId,
    actorIp: a.actorIp ?? null,
    actorUserAgent: a.actorUserAgent ?? null,
    tenantId: a.tenantId,
    before: a.before ?? null,
    after: a.after ?? null,
    meta: a.meta ?? null,
    traceId: a.traceId ?? null,
    timestamp: a.timestamp,
  };
  return eventRecord(
    {
      eventId: id,
      type: AUDIT_RECORD_CREATED,
      source: 'audit',
      tenantId: a.tenantId,
      traceId: traceIdOf({ eventId: id, traceId: a.traceId }),
      timestamp: a.timestamp,
      schemaVersion: '1.0.0',
      payload: data,
    },
    a.entityId,
    { ...(a.traceId ? { traceId: a.traceId } : {}), actorId: a.actorId },
  );
};

export interface RecorderOptions {
  /** records waiting at most; beyond it record() refuses at once (503: the caller must not acknowledge) */
  maxBuffer: number;
  /** records per publish */
  batchSize: number;
  /**
   * a publish that has not finished by then is treated as failed (the batch goes to the outbox):
   * the longest a caller waits for a hanging log before its record is staged
   */
  publishTimeoutMs: number;
  /** after a failed publish, batches go straight to the outbox table for this long */
  logDownMs: number;
}

const defaults: RecorderOptions = {
  maxBuffer: 20_000,
  batchSize: 500,
  publishTimeoutMs: 1000,
  logDownMs: 30_000,
};

/** the audit outbox (migration 0501): records waiting for the log, published by the audit relay */
export const AUDIT_OUTBOX = 'audit.outbox';

/** the statement that stages records in the outbox (in a caller's transaction, or on its own) */
export const stageAuditSql = (records: readonly OutgoingRecord[]): { text: string; values: unknown[] } => ({
  text: `INSERT INTO ${AUDIT_OUTBOX} (event_id, record)
         SELECT (r->'headers'->>'eventId')::uuid, r FROM jsonb_array_elements($1::jsonb) AS r ON CONFLICT (event_id) DO NOTHING`,
  values: [JSON.stringify(records)],
});

/**
 * Stages audit records in the outbox through q — a business operation's transaction, so the records
 * exist exactly when it commits (the audit relay publishes them).
 */
export const stageAudit = async (q: Queryable, records: readonly OutgoingRecord[]): Promise<void> => {
  if (records.length === 0) return;
  const { text, values } = stageAuditSql(records);
  await q.query(text, values);
};

interface Waiting {
  record: OutgoingRecord;
  durable: () => void;
  lost: (error: unknown) => void;
}

/**
 * The audit write pipeline for records that are not part of a command's transaction (those are
 * staged in it: UnitOfWork.audit): record() resolves once the record is durable — published onto
 * platform.audit.events, or, while the log cannot take it, staged in the outbox table that the
 * audit relay publishes later — so a caller that answers after it (POST /audit's 202, the edge's
 * API-call record) never acknowledges what a crash could lose (spec 002: never lost; DESIGN.md
 * mechanism 10). Group commit: a batch is published at once when none is in flight; records that
 * arrive meanwhile form the next one. record() rejects with a 503 problem when neither the log nor
 * PostgreSQL took the record, or when too many are waiting: the caller must not acknowledge it.
 */
export class AuditRecorder {
  private waiting: Waiting[] = [];
  private flushing: Promise<void> | null = null;
  private logDownUntil = 0;
  private readonly options: RecorderOptions;

  constructor(
    private readonly kernel: AuditKernel,
    options: Partial<RecorderOptions> = {},
  ) {
    this.options = { ...defaults, ...options };
  }

  /** a record in the platform's event envelope, with headers.eventId (the outbox's key); resolves once durable */
  record(record: OutgoingRecord): Promise<void> {
    if (this.waiting.length >= this.options.maxBuffer) return Promise.reject(commonErrors.overloaded(1));
    return new Promise((durable, lost) => {
      this.waiting.push({ record, durable, lost });
      this.kick();
    });
  }

  /** resolves once everything recorded so far is durable (tests and shutdown) */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  async close(): Promise<void> {
    await this.flush();
  }

  private kick(): void {
    if (this.flushing) return;
    this.flushing = this.drain().finally(() => {
      this.flushing = null;
      if (this.waiting.length > 0) this.kick();
    });
  }

  private async drain(): Promise<void> {
    while (this.waiting.length > 0) {
      const batch = this.waiting.splice(0, this.options.batchSize);
      const records = batch.map((w) => w.record);
      try {
        if (!(Date.now() >= this.logDownUntil && (await this.publish(records)))) await this.toOutbox(records);
        for (const w of batch) w.durable();
      } catch (error) {
        this.kernel.logger.error(
          { err: error, records: batch.length },
          'audit records could not be made durable (log and PostgreSQL unavailable); refused',
        );
        const refusal = commonErrors.serviceUnavailable('The audit record could not be stored; retry shortly.');
        for (const w of batch) w.lost(refusal);
      }
    }
  }

  private async publish(records: OutgoingRecord[]): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.kernel.log.publish(AUDIT_TOPIC, records),
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`publish took over ${this.options.publishTimeoutMs} ms`)),
            this.options.publishTimeoutMs,
          );
        }),
      ]);
      return true;
    } catch (error) {
      this.logDownUntil = Date.now() + this.options.logDownMs;
      this.kernel.logger.warn({ err: error, records: records.length }, 'audit: log unavailable; writing to the outbox');
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  private async toOutbox(records: OutgoingRecord[]): Promise<void> {
    await stageAudit(this.kernel.db, records);
  }
}

/**
 * The audit relay: publishes outbox records in insertion order, then deletes them. No transaction stays open
 * across the publish: a transaction holding an id would hold back pg_snapshot_xmin for the whole
 * server, and with it every reader of the global log (DESIGN.md mechanism 1), for as long as the
 * log hangs. One replayer at a time (a session advisory lock, which takes no transaction id); a
 * crash between publish and delete republishes, and consumers dedupe by eventId. The publish has a
 * deadline. Returns how many records it published.
 */
export const relayAuditOutbox = async (
  kernel: AuditKernel,
  batchSize = 500,
  publishTimeoutMs = 5000,
): Promise<number> => {
  const client = await kernel.db.connect();
  try {
    const {
      rows: [lock],
    } = await client.query<{ ok: boolean }>(`SELECT pg_try_advisory_lock(hashtext('audit.outbox-relay')) AS ok`);
    if (!lock?.ok) return 0;
    try {
      const { rows } = await client.query<{ id: string; record: OutgoingRecord }>(
        `SELECT id, record FROM ${AUDIT_OUTBOX} ORDER BY id LIMIT $1`,
        [batchSize],
      );
      if (rows.length === 0) return 0;
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          kernel.log.publish(
            AUDIT_TOPIC,
            rows.map((r) => r.record),
          ),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`publish took over ${publishTimeoutMs} ms`)), publishTimeoutMs);
          }),
        ]);
      } finally {
        clearTimeout(timer);
      }
      await client.query(`DELETE FROM ${AUDIT_OUTBOX} WHERE id = ANY($1::bigint[])`, [rows.map((r) => r.id)]);
      return rows.length;
    } finally {
      await client.query(`SELECT pg_advisory_unlock(hashtext('audit.outbox-relay'))`);
    }
  } finally {
    client.release();
  }
};
