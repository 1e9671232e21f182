import { createHash } from 'node:crypto';
import type { DomainError } from '../../domain/shared/errors';
import { defineErrors } from '../../domain/shared/errors';
import { JsonNumber, RawJson } from '../../domain/shared/json';
import type { Db } from '../postgres/db';
import type { BoundStatement } from '../postgres/inline';

/**
 * Idempotency records (mechanism 3): the statements that lock a request's key for its
 * transaction, read its record and write it, shared by the command runner and the batcher.
 */

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
    status: 409,
    suffix: 'idempotency-conflict',
    title: 'Idempotency key reused',
    detail: 'This Idempotency-Key was already used with a different request body.',
  }),
  inProgress: () => ({
    status: 409,
    suffix: 'idempotency-conflict',
    title: 'Request in progress',
    detail: 'A request with this Idempotency-Key is still being processed; retry later.',
    extensions: { reason: 'in_progress' },
    headers: { 'Retry-After': '1' },
  }),
});

export interface KeyRef {
  tenantId: string;
  key: string;
}

/**
 * Idempotency keys are UUIDs, and UUIDs compare case-insensitively (RFC 9562): the same key in
 * upper case is the same key. Every key is stored and looked up in this form.
 */
export const normalizeIdempotencyKey = (key: string): string => key.trim().toLowerCase();
export interface StoredRow {
  i: string;
  request_hash: string;
  response_status: number;
  response_type: string;
  response_body: Buffer;
}

/** try-locks each key for the transaction (a row per key, in order: i, locked) */
export const lockKeysSql = (keys: KeyRef[]): BoundStatement => ({
  name: 'es_idempotency_lock',
  text: `SELECT x.i, pg_try_advisory_xact_lock(hashtextextended(x.k, 7)) AS locked
   FROM unnest($1::text[]) WITH ORDINALITY AS x(k, i) ORDER BY x.i`,
  values: [keys.map((k) => `${k.tenantId}:${normalizeIdempotencyKey(k.key)}`)],
});

/** the live records of these keys (a row per key found, with its ordinal i) */
export const lookupKeysSql = (keys: KeyRef[]): BoundStatement => ({
  name: 'es_idempotency_lookup',
  text: `SELECT x.i, r.request_hash, r.response_status, r.response_type, r.response_body
   FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS x(t, k, i)
   JOIN es.idempotency r ON r.tenant_id = x.t AND r.idempotency_key = x.k AND r.expires_at > now()`,
  values: [keys.map((k) => k.tenantId), keys.map((k) => normalizeIdempotencyKey(k.key))],
});

/** what a key's stored record answers to this request: null (no record), the stored response, or 409 for another body */
export const storedAnswer = (idem: IdempotencyRequest, row: StoredRow | undefined): StoredResponse | null => {
  if (!row) return null;
  if (row.request_hash !== idem.requestHash) throw idempotencyErrors.keyReused();
  return { status: row.response_status, contentType: row.response_type, body: row.response_body };
};

/**
 * Idempotency records as one statement with their values bound (arrays), so that it can share a
 * pipelined round trip with the COMMIT. An expired record with the same key may still be there
 * until the purge runs: it is replaced.
 */
export const recordsSql = (
  records: { tenantId: string; idem: IdempotencyRequest; response: StoredResponse }[],
  ttlMs: number,
): BoundStatement => ({
  name: 'es_idempotency_records',
  text: `INSERT INTO es.idempotency (tenant_id, idempotency_key, request_hash, response_status, response_type, response_body, expires_at)
   SELECT r.t, r.k, r.h, r.s, r.ct, COALESCE(convert_to(r.text, 'UTF8'), r.bytes), now() + $8::float8 * interval '1 millisecond'
     FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::bytea[]) AS r(t, k, h, s, ct, text, bytes)
   ON CONFLICT (tenant_id, idempotency_key) DO UPDATE SET request_hash = EXCLUDED.request_hash, response_status = EXCLUDED.response_status,
     response_type = EXCLUDED.response_type, response_body = EXCLUDED.response_body, created_at = now(), expires_at = EXCLUDED.expires_at`,
  values: [
    records.map((r) => r.tenantId),
    records.map((r) => normalizeIdempotencyKey(r.idem.key)),
    records.map((r) => r.idem.requestHash),
    records.map((r) => Number(r.response.status)),
    records.map((r) => r.response.contentType),
    records.map((r) => utf8Text(r.response.body)),
    records.map((r) => (utf8Text(r.response.body) === null ? r.response.body : null)),
    Math.floor(ttlMs),
  ],
});

/** a stored body as text when it is UTF-8 text PostgreSQL can hold (every JSON answer: half the size of bytea's hex), else null */
const utf8Text = (body: Buffer): string | null => {
  const text = body.toString('utf8');
  return !text.includes('\0') && Buffer.from(text, 'utf8').equals(body) ? text : null;
};

/** the hash that decides whether a repeated key carries the same request */
export const hashRequest = (method: string, route: string, body: unknown): string =>
  createHash('sha256').update(`${method} ${route}\n`).update(canonicalJson(body)).digest('hex');

/** JSON with object keys sorted, so that key order does not make two equal bodies differ */
export const canonicalJson = (value: unknown): string => JSON.stringify(sortKeys(value));
const sortKeys = (value: unknown): unknown => {
  // exact-text values (money's amount and meta): a number by its literal, an object by its meaning
  if (value instanceof JsonNumber) return { $number: value.text };
  if (value instanceof RawJson) return sortKeys(value.value);
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
};

/** deletes expired idempotency records; a worker calls it periodically */
export const purgeIdempotency = async (db: Db): Promise<number> =>
  (await db.query('DELETE FROM es.idempotency WHERE expires_at <= now()')).rowCount ?? 0;
