import type { AuditRecordView, NewAuditRecord } from './record';

type Json = Record<string, unknown>;

/**
 * The two ClickHouse tables that hold a tenant's records, with the same columns: the audit store
 * (records of platform.audit.events, written by the audit consumer) and the audit view of the
 * domain (a projection of the global log, `audit.domain`, read through its view). Each is one of
 * the tenant's hash chains.
 */
export const RECORDS = 'audit_records';
export const DOMAIN = 'audit_domain';
export const DOMAIN_VIEW = 'audit.domain';
export const CHAINS = { log: RECORDS, domain: DOMAIN } as const;
export type ChainName = keyof typeof CHAINS;

/**
 * A record as ClickHouse holds it: JSON members as text (hashed as stored), the position in its
 * tenant's hash chain, the chain links. Both audit tables share these columns.
 */
export interface AuditRow {
  tenant_id: string;
  id: string;
  seq: string;
  action: string;
  entity_type: string;
  entity_id: string;
  actor_id: string;
  actor_ip: string | null;
  actor_user_agent: string | null;
  before: string | null;
  after: string | null;
  meta: string | null;
  trace_id: string | null;
  /** ISO 8601 with milliseconds and Z (ClickHouse answers `YYYY-MM-DD hh:mm:ss.mmm`; normalize with isoOf) */
  timestamp: string;
  prev_hash: string;
  hash: string;
}

/** a record before it takes its place in a chain */
export type UnchainedRow = Omit<AuditRow, 'seq' | 'prev_hash' | 'hash'>;

const text = (value: unknown): string | null =>
  value && typeof value === 'object' && !Array.isArray(value) ? JSON.stringify(value) : null;
const parsed = (value: string | null): Json | null =>
  value === null || value === '' ? null : (JSON.parse(value) as Json);

/** ClickHouse's DateTime64 text or any ISO form → ISO 8601 with milliseconds and Z */
export const isoOf = (timestamp: string): string => {
  const t = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?$/.test(timestamp)
    ? Date.parse(`${timestamp.replace(' ', 'T')}Z`)
    : Date.parse(timestamp);
  if (Number.isNaN(t)) throw new Error(`not a timestamp: ${timestamp}`);
  return new Date(t).toISOString();
};

export const rowOf = (r: NewAuditRecord): UnchainedRow => ({
  tenant_id: r.tenantId,
  id: r.id,
  action: r.action,
  entity_type: r.entityType,
  entity_id: r.entityId,
  actor_id: r.actorId,
  actor_ip: r.actorIp ?? null,
  actor_user_agent: r.actorUserAgent ?? null,
  before: text(r.before),
  after: text(r.after),
  meta: text(r.meta),
  trace_id: r.traceId ?? null,
  timestamp: isoOf(r.timestamp),
});

export const viewOf = (row: Omit<AuditRow, 'seq' | 'prev_hash' | 'hash'>): AuditRecordView => ({
  id: row.id,
  action: row.action,
  entityType: row.entity_type,
  entityId: row.entity_id,
  actorId: row.actor_id,
  actorIp: row.actor_ip,
  actorUserAgent: row.actor_user_agent,
  tenantId: row.tenant_id,
  before: parsed(row.before),
  after: parsed(row.after),
  meta: parsed(row.meta),
  traceId: row.trace_id,
  timestamp: isoOf(row.timestamp),
});

/** a chained row as ClickHouse takes it (UInt64 as a JSON number) */
export const insertable = (row: AuditRow) => ({ ...row, seq: Number(row.seq) });
