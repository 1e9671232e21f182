import { createHash } from 'node:crypto';
import { DomainError, defineErrors } from '../../domain/shared/errors';
import { withSpan } from '../observability/tracing';
import pgUtils from 'pg/lib/utils.js';
import type { Db, Tx } from '../postgres/db';
import { inTransaction } from '../postgres/db';
import { PgCode, pgErrorCode } from '../postgres/db';
import type { ProjectionEngine } from '../projections/engine';
import { StreamVersionConflict } from './errors';
import type { CausationMeta, EventStore } from './event-store';
import { UnitOfWork } from './unit-of-work';

/** A response as the client received it, stored byte for byte under its idempotency key. */
export interface StoredResponse {
  status: number;
  contentType: string;
  body: Buffer;
}

export interface IdempotencyRequest {
  key: string;
  /** hash of what makes two requests "the same": method, route, canonical body */
  requestHash: string;
  /** renders the command's result as the response to store and send */
  render: (result: unknown) => StoredResponse;
  /** renders a refusal; return null for refusals that must not be remembered (transient ones) */
  renderError: (error: DomainError) => StoredResponse | null;
}

export const idempotencyErrors = defineErrors({
  keyReused: () => ({
    status: 409, suffix: 'idempotency-conflict', title: 'Idempotency key reused',
    detail: 'This Idempotency-Key was already used with a different request body.',
  }),
  inProgress: () => ({
    status: 409, suffix: 'idempotency-conflict', title: 'Request in progress',
    detail: 'A request with this Idempotency-Key is still being processed; retry later.',
    extensions: { reason: 'in_progress' }, headers: { 'Retry-After': '1' },
  }),
});

export interface CommandRunnerOptions {
  /** how long idempotency records are kept (at least 7 days by default) */
  idempotencyTtlMs: number;
  /** version conflicts retried before giving up, for commands that did not pin a version */
  conflictRetries: number;
  /** waits before each retry after a deadlock or serialization failure */
  deadlockBackoffMs: readonly number[];
}

export const defaultRunnerOptions: CommandRunnerOptions = {
  idempotencyTtlMs: 7 * 24 * 3600 * 1000,
  conflictRetries: 5,
  deadlockBackoffMs: [100, 200, 400],
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const { escapeLiteral } = pgUtils;

/**
 * Executes commands: one transaction per attempt, holding the appended events, the aggregates'
 * stored states, the inline projections and the idempotency record; retried on version conflicts
 * and deadlocks; at most one execution per idempotency key.
 */
export class CommandRunner {
  constructor(
    private readonly db: Db,
    private readonly store: EventStore,
    private readonly projections: ProjectionEngine | null,
    private readonly options: CommandRunnerOptions = defaultRunnerOptions,
  ) {}

  /** runs fn in a unit of work and commits; retries the whole of fn on conflicts */
  async run<T>(meta: CausationMeta, fn: (uow: UnitOfWork) => Promise<T>): Promise<T> {
    return withSpan('command', { tenantId: meta.tenantId, traceId: meta.traceId ?? '' },
      () => inTransaction(this.db, (client) => this.attempt(client, meta, fn), { savepoint: 'command' }));
  }

  /**
   * Runs a command under an idempotency key (mechanism 3), in one transaction: a transaction-level
   * advisory lock on the key makes a concurrent duplicate answer 409 at once instead of waiting or
   * executing twice; a finished one answers the stored response; the new record commits with the
   * events. The key's lock, its lookup and the transaction's start travel in one round trip, and
   * so do the record and the commit.
   */
  async runIdempotent(meta: CausationMeta, idem: IdempotencyRequest, fn: (uow: UnitOfWork) => Promise<unknown>): Promise<StoredResponse & { replayed: boolean }> {
    return withSpan('command', { tenantId: meta.tenantId, traceId: meta.traceId ?? '', idempotent: true }, () => this.idempotent(meta, idem, fn));
  }

  private async idempotent(meta: CausationMeta, idem: IdempotencyRequest, fn: (uow: UnitOfWork) => Promise<unknown>): Promise<StoredResponse & { replayed: boolean }> {
    const client = await this.db.connect();
    try {
      const stored = await this.beginKeyed(client, meta.tenantId, idem);
      if (stored) {
        await client.query('ROLLBACK');
        return { ...stored, replayed: true };
      }
      let response: StoredResponse;
      try {
        response = idem.render(await this.attempt(client, meta, fn));
      } catch (error) {
        const refusal = error instanceof DomainError ? idem.renderError(error) : null;
        if (!refusal) throw error;
        await client.query('ROLLBACK TO SAVEPOINT command');
        response = refusal;
      }
      await client.query(`${recordSql(meta.tenantId, idem, response, this.options.idempotencyTtlMs)}; COMMIT`);
      return { ...response, replayed: false };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /** BEGIN, the key's lock and its stored response, and the command's savepoint, in one round trip */
  private async beginKeyed(client: Tx, tenantId: string, idem: IdempotencyRequest): Promise<StoredResponse | null> {
    const tenant = escapeLiteral(tenantId);
    const key = escapeLiteral(idem.key);
    const results = await client.query(`BEGIN;
      SELECT pg_try_advisory_xact_lock(hashtextextended(${escapeLiteral(`${tenantId}:${idem.key}`)}, 7)) AS locked,
        r.request_hash, r.response_status, r.response_type, r.response_body
      FROM (SELECT 1) one LEFT JOIN es.idempotency r ON r.tenant_id = ${tenant} AND r.idempotency_key = ${key} AND r.expires_at > now();
      SAVEPOINT command`) as unknown as { rows: { locked: boolean; request_hash: string | null; response_status: number; response_type: string; response_body: Buffer }[] }[];
    const row = results[1]!.rows[0]!;
    if (!row.locked) throw idempotencyErrors.inProgress();
    if (row.request_hash === null) return null;
    if (row.request_hash !== idem.requestHash) throw idempotencyErrors.keyReused();
    return { status: row.response_status, contentType: row.response_type, body: row.response_body };
  }

  /**
   * Runs fn and flushes its unit of work inside the open transaction, from the savepoint
   * "command": a version conflict the client did not pin rolls back to it and runs fn again; a
   * deadlock or serialization failure does the same after a wait (100, 200, 400 ms).
   */
  private async attempt<T>(client: Tx, meta: CausationMeta, fn: (uow: UnitOfWork) => Promise<T>): Promise<T> {
    let conflicts = 0;
    let deadlocks = 0;
    for (;;) {
      try {
        const uow = new UnitOfWork(client, meta, this.store);
        const result = await fn(uow);
        await uow.flush(this.projections);
        return result;
      } catch (error) {
        const code = pgErrorCode(error);
        const conflict = error instanceof StreamVersionConflict && conflicts < this.options.conflictRetries;
        const deadlock = (code === PgCode.deadlockDetected || code === PgCode.serializationFailure) && deadlocks < this.options.deadlockBackoffMs.length;
        if (!conflict && !deadlock) throw error;
        await client.query('ROLLBACK TO SAVEPOINT command');
        if (conflict) conflicts += 1;
        else await sleep(this.options.deadlockBackoffMs[deadlocks++]!);
      }
    }
  }
}

/**
 * The idempotency record as one statement with its values inlined (escaped), so that it can share a
 * round trip with the COMMIT. An expired record with the same key may still be there until the
 * purge runs: it is replaced.
 */
const recordSql = (tenantId: string, idem: IdempotencyRequest, response: StoredResponse, ttlMs: number): string =>
  `INSERT INTO es.idempotency (tenant_id, idempotency_key, request_hash, response_status, response_type, response_body, expires_at)
   VALUES (${escapeLiteral(tenantId)}, ${escapeLiteral(idem.key)}, ${escapeLiteral(idem.requestHash)}, ${Number(response.status)},
     ${escapeLiteral(response.contentType)}, '\\x${response.body.toString('hex')}'::bytea, now() + ${Math.floor(ttlMs)} * interval '1 millisecond')
   ON CONFLICT (tenant_id, idempotency_key) DO UPDATE SET request_hash = EXCLUDED.request_hash, response_status = EXCLUDED.response_status,
     response_type = EXCLUDED.response_type, response_body = EXCLUDED.response_body, created_at = now(), expires_at = EXCLUDED.expires_at`;

/** the hash that decides whether a repeated key carries the same request */
export const hashRequest = (method: string, route: string, body: unknown): string =>
  createHash('sha256').update(`${method} ${route}\n`).update(canonicalJson(body)).digest('hex');

/** JSON with object keys sorted, so that key order does not make two equal bodies differ */
export const canonicalJson = (value: unknown): string => JSON.stringify(sortKeys(value));
const sortKeys = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.keys(value).sort().map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]));
  }
  return value;
};

/** deletes expired idempotency records; a worker calls it periodically */
export const purgeIdempotency = async (db: Db): Promise<number> => (await db.query('DELETE FROM es.idempotency WHERE expires_at <= now()')).rowCount ?? 0;
