import type { Db } from './postgres/db';
import type { Logger } from './observability/logger';
import type { LogPort, OutgoingRecord } from './log/port';
import type { IdGenerator } from './runtime/clock';

/**
 * The audit write pipeline (spec 002): services record, a buffer publishes onto
 * platform.audit.events, a durable fallback table (gateway.api_audit_fallback, kept until
 * replayed) takes what the log refuses, and a worker replays it every 30 s. A failure to audit
 * never blocks the business operation.
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
  return {
    key: a.entityId,
    value: JSON.stringify({
      eventId: id,
      type: AUDIT_RECORD_CREATED,
      schemaVersion: 1,
      tenantId: a.tenantId,
      actorId: a.actorId,
      traceId: a.traceId ?? null,
      causationId: null,
      correlationId: a.traceId ?? null,
      occurredAt: a.timestamp,
      entityId: a.entityId,
      data,
    }),
    headers: {
      eventId: id,
      type: AUDIT_RECORD_CREATED,
      tenantId: a.tenantId,
      ...(a.traceId ? { traceId: a.traceId } : {}),
    },
    timestamp: Date.parse(a.timestamp),
  };
};

export interface RecorderOptions {
  /** records held in memory at most; beyond it new records are dropped (and counted) */
  maxBuffer: number;
  /** records per publish */
  batchSize: number;
  flushEveryMs: number;
  /** a publish that has not finished by then is treated as failed (the batch goes to the fallback) */
  publishTimeoutMs: number;
  /** after a failed publish, batches go straight to the fallback table for this long */
  logDownMs: number;
}

// Small, frequent batches: encoding and publishing 2,000 records at once held the event loop for tens of ms.
const defaults: RecorderOptions = {
  maxBuffer: 20_000,
  batchSize: 200,
  flushEveryMs: 100,
  publishTimeoutMs: 5000,
  logDownMs: 30_000,
};

/**
 * Records audit records off the caller's path: record() only pushes onto a bounded buffer; a timer
 * publishes batches onto platform.audit.events through the log port (spec 002, audit write
 * pipeline). When the log is down a
 * batch goes to the durable fallback table (replayed by the gateway worker); when the database is
 * down as well, or the buffer is full, records are dropped and counted in the log, never awaited
 * by a request.
 */
export class AuditRecorder {
  /** encoded as they are recorded, so a flush only publishes */
  private buffer: OutgoingRecord[] = [];
  private flushing: Promise<void> | null = null;
  private readonly timer: NodeJS.Timeout;
  private logDownUntil = 0;
  private dropped = 0;
  private lastDropLog = 0;
  private readonly options: RecorderOptions;

  constructor(
    private readonly kernel: AuditKernel,
    options: Partial<RecorderOptions> = {},
  ) {
    this.options = { ...defaults, ...options };
    this.timer = setInterval(() => void this.flush(), this.options.flushEveryMs);
    this.timer.unref();
  }

  /** a record in the platform's event envelope, with headers.eventId (the fallback table's key) */
  record(record: OutgoingRecord): void {
    if (this.buffer.length >= this.options.maxBuffer) {
      this.drop(1, null);
      return;
    }
    this.buffer.push(record);
    if (this.buffer.length >= this.options.batchSize && !this.flushing) void this.flush();
  }

  /** publishes everything buffered; resolves when done (tests and shutdown) */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.buffer.length === 0) return;
    this.flushing = this.drain().finally(() => {
      this.flushing = null;
    });
    await this.flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private async drain(): Promise<void> {
    while (this.buffer.length > 0) {
      const records = this.buffer.splice(0, this.options.batchSize);
      if (Date.now() >= this.logDownUntil && (await this.publish(records))) continue;
      await this.toFallback(records);
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
      this.kernel.logger.warn(
        { err: error, records: records.length },
        'audit: log unavailable; writing to the fallback table',
      );
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  private async toFallback(records: OutgoingRecord[]): Promise<void> {
    try {
      await this.kernel.db.query(
        `INSERT INTO gateway.api_audit_fallback (event_id, record)
         SELECT (r->'headers'->>'eventId')::uuid, r FROM jsonb_array_elements($1::jsonb) AS r ON CONFLICT (event_id) DO NOTHING`,
        [JSON.stringify(records)],
      );
    } catch (error) {
      this.drop(records.length, error);
    }
  }

  private drop(n: number, error: unknown): void {
    this.dropped += n;
    const now = Date.now();
    if (now - this.lastDropLog >= 60_000) {
      this.lastDropLog = now;
      this.kernel.logger.error(
        { err: error ?? undefined, dropped: this.dropped },
        'audit records dropped (buffer full or fallback table unavailable)',
      );
    }
  }
}

/**
 * Publishes fallback records in insertion order, then deletes them. No transaction stays open
 * across the publish: a transaction holding an id would hold back pg_snapshot_xmin for the whole
 * server, and with it every reader of the global log (DESIGN.md mechanism 1), for as long as the
 * log hangs. One replayer at a time (a session advisory lock, which takes no transaction id); a
 * crash between publish and delete republishes, and consumers dedupe by eventId. The publish has a
 * deadline. Returns how many records it published.
 */
export const replayAuditFallback = async (
  kernel: AuditKernel,
  batchSize = 500,
  publishTimeoutMs = 5000,
): Promise<number> => {
  const client = await kernel.db.connect();
  try {
    const {
      rows: [lock],
    } = await client.query<{ ok: boolean }>(
      `SELECT pg_try_advisory_lock(hashtext('gateway.audit-fallback-replay')) AS ok`,
    );
    if (!lock?.ok) return 0;
    try {
      const { rows } = await client.query<{ id: string; record: OutgoingRecord }>(
        'SELECT id, record FROM gateway.api_audit_fallback ORDER BY id LIMIT $1',
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
      await client.query('DELETE FROM gateway.api_audit_fallback WHERE id = ANY($1::bigint[])', [
        rows.map((r) => r.id),
      ]);
      return rows.length;
    } finally {
      await client.query(`SELECT pg_advisory_unlock(hashtext('gateway.audit-fallback-replay'))`);
    }
  } finally {
    client.release();
  }
};
