import { createHash } from 'node:crypto';
import { DomainError, defineErrors } from '../../domain/shared/errors';
import { withSpan } from '../observability/tracing';
import type { Db, Tx } from '../postgres/db';
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
    return withSpan('command', { tenantId: meta.tenantId, traceId: meta.traceId ?? '' }, async () => {
      const client = await this.db.connect();
      try {
        return (await this.attempt(client, meta, fn, null)) as T;
      } finally {
        client.release();
      }
    });
  }

  /**
   * Runs a command under an idempotency key (mechanism 3): a session advisory lock on the key
   * makes a concurrent duplicate answer 409 at once instead of executing twice; a finished one
   * answers the stored response; the record is committed in the command's own transaction.
   */
  async runIdempotent(meta: CausationMeta, idem: IdempotencyRequest, fn: (uow: UnitOfWork) => Promise<unknown>): Promise<StoredResponse & { replayed: boolean }> {
    return withSpan('command', { tenantId: meta.tenantId, traceId: meta.traceId ?? '', idempotent: true }, () => this.idempotent(meta, idem, fn));
  }

  private async idempotent(meta: CausationMeta, idem: IdempotencyRequest, fn: (uow: UnitOfWork) => Promise<unknown>): Promise<StoredResponse & { replayed: boolean }> {
    const client = await this.db.connect();
    const lockKey = `${meta.tenantId}:${idem.key}`;
    try {
      const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock(hashtextextended($1, 7)) AS locked', [lockKey]);
      if (!rows[0]?.locked) throw idempotencyErrors.inProgress();
      try {
        const stored = await this.storedResponse(client, meta.tenantId, idem);
        if (stored) return { ...stored, replayed: true };
        try {
          const response = (await this.attempt(client, meta, fn, idem)) as StoredResponse;
          return { ...response, replayed: false };
        } catch (error) {
          const refusal = error instanceof DomainError ? idem.renderError(error) : null;
          if (!refusal) throw error;
          await this.insertRecord(client, meta.tenantId, idem, refusal);
          return { ...refusal, replayed: false };
        }
      } finally {
        await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 7))', [lockKey]).catch(() => undefined);
      }
    } finally {
      client.release();
    }
  }

  /** one transaction per try; returns fn's result, or the rendered response when idem is given */
  private async attempt(client: Tx, meta: CausationMeta, fn: (uow: UnitOfWork) => Promise<unknown>, idem: IdempotencyRequest | null): Promise<unknown> {
    let conflicts = 0;
    let deadlocks = 0;
    for (;;) {
      await client.query('BEGIN');
      try {
        const uow = new UnitOfWork(client, meta, this.store);
        const result = await fn(uow);
        await uow.flush(this.projections);
        let output: unknown = result;
        if (idem) {
          const response = idem.render(result);
          await this.insertRecord(client, meta.tenantId, idem, response);
          output = response;
        }
        await client.query('COMMIT');
        return output;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        if (error instanceof StreamVersionConflict && conflicts < this.options.conflictRetries) {
          conflicts += 1;
          continue;
        }
        const code = pgErrorCode(error);
        if ((code === PgCode.deadlockDetected || code === PgCode.serializationFailure) && deadlocks < this.options.deadlockBackoffMs.length) {
          await sleep(this.options.deadlockBackoffMs[deadlocks]!);
          deadlocks += 1;
          continue;
        }
        throw error;
      }
    }
  }

  private async storedResponse(client: Tx, tenantId: string, idem: IdempotencyRequest): Promise<StoredResponse | null> {
    const { rows } = await client.query<{ request_hash: string; response_status: number; response_type: string; response_body: Buffer }>(
      `SELECT request_hash, response_status, response_type, response_body FROM es.idempotency
       WHERE tenant_id = $1 AND idempotency_key = $2 AND expires_at > now()`, [tenantId, idem.key]);
    const row = rows[0];
    if (!row) return null;
    if (row.request_hash !== idem.requestHash) throw idempotencyErrors.keyReused();
    return { status: row.response_status, contentType: row.response_type, body: row.response_body };
  }

  private async insertRecord(client: Tx, tenantId: string, idem: IdempotencyRequest, response: StoredResponse): Promise<void> {
    // An expired record with the same key may still be there until the purge runs: replace it.
    await client.query(
      `INSERT INTO es.idempotency (tenant_id, idempotency_key, request_hash, response_status, response_type, response_body, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, now() + $7 * interval '1 millisecond')
       ON CONFLICT (tenant_id, idempotency_key) DO UPDATE SET request_hash = EXCLUDED.request_hash, response_status = EXCLUDED.response_status,
         response_type = EXCLUDED.response_type, response_body = EXCLUDED.response_body, created_at = now(), expires_at = EXCLUDED.expires_at`,
      [tenantId, idem.key, idem.requestHash, response.status, response.contentType, response.body, this.options.idempotencyTtlMs],
    );
  }
}

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
