import type { AnonymizationRule } from '../../domain/audit/anonymization';
import type { ExportJobRecord } from '../../domain/audit/export';
import type { AuditFilter } from '../../domain/audit/filters';
import type { AuditRow } from '../../domain/audit/rows';
import { DOMAIN, RECORDS } from '../../domain/audit/rows';
import type { AnalyticsStore } from '../../infra/clickhouse/port';
import { chTime, tableOf } from '../../infra/clickhouse/port';
import type { Queryable } from '../../infra/postgres/db';

/**
 * Reads of the audit views. A tenant's records live in two tables — the audit store
 * (audit_records, from platform.audit.events) and the audit view of the domain (audit_domain, a
 * view onto the projection's active generation) — read as one: each side ordered and limited on
 * its own (ClickHouse reads in the order of the key (tenant_id, timestamp, id) and stops early),
 * then merged. The domain side takes one row per id (a replayed batch may have left a duplicate
 * that ReplacingMergeTree has not merged yet). Every query filters by tenant. The audit commands
 * read through their own lookups (commands/audit/lookups.ts).
 */

// UInt64 seq arrives as a string (output_format_json_quote_64bit_integers)
const COLUMNS =
  'tenant_id, id, seq, action, entity_type, entity_id, actor_id, actor_ip, actor_user_agent, before, after, meta, trace_id, timestamp, prev_hash, hash';

export interface Keyset {
  timestamp: string;
  id: string;
}

interface Listing {
  filter: AuditFilter;
  after?: Keyset;
  limit: number;
  order: 'newest' | 'oldest';
}

const conditions = (tenantId: string, o: Listing): { where: string; params: Record<string, unknown> } => {
  const f = o.filter;
  const params: Record<string, unknown> = { tenant: tenantId, limit: o.limit };
  const where = ['tenant_id = {tenant:String}'];
  if (f.action && 'exact' in f.action) {
    where.push('action = {action:String}');
    params.action = f.action.exact;
  }
  if (f.action && 'prefix' in f.action) {
    where.push('startsWith(action, {actionPrefix:String})');
    params.actionPrefix = f.action.prefix;
  }
  if (f.entityType !== undefined) {
    where.push('entity_type = {entityType:String}');
    params.entityType = f.entityType;
  }
  if (f.entityId !== undefined) {
    where.push('entity_id = {entityId:String}');
    params.entityId = f.entityId;
  }
  if (f.actorId !== undefined) {
    where.push('actor_id = {actorId:String}');
    params.actorId = f.actorId;
  }
  if (f.since) {
    where.push('timestamp >= {since:DateTime64(3)}');
    params.since = chTime(f.since);
  }
  if (f.until) {
    where.push('timestamp < {until:DateTime64(3)}');
    params.until = chTime(f.until);
  }
  if (o.after) {
    where.push(`(timestamp, id) ${o.order === 'newest' ? '<' : '>'} ({afterTs:DateTime64(3)}, {afterId:String})`);
    params.afterTs = chTime(o.after.timestamp);
    params.afterId = o.after.id;
  }
  return { where: where.join(' AND '), params };
};

/** one page of a tenant's records, in timestamp order (then id), after a keyset position */
export const listRecords = async (ch: AnalyticsStore, tenantId: string, o: Listing): Promise<AuditRow[]> => {
  const { where, params } = conditions(tenantId, o);
  const dir = o.order === 'newest' ? 'DESC' : 'ASC';
  const side = (table: string, dedup: boolean) =>
    `(SELECT ${COLUMNS} FROM ${tableOf(ch, table)} WHERE ${where} ORDER BY timestamp ${dir}, id ${dir}${dedup ? ' LIMIT 1 BY id' : ''} LIMIT {limit:UInt32})`;
  return ch.query<AuditRow>(
    `SELECT * FROM (${side(RECORDS, false)} UNION ALL ${side(DOMAIN, true)}) ORDER BY timestamp ${dir}, id ${dir} LIMIT {limit:UInt32}`,
    params,
  );
};

export const findRecord = async (ch: AnalyticsStore, tenantId: string, id: string): Promise<AuditRow | null> => {
  const side = (table: string) =>
    `(SELECT ${COLUMNS} FROM ${tableOf(ch, table)} WHERE tenant_id = {tenant:String} AND id = {id:String} LIMIT 1)`;
  const rows = await ch.query<AuditRow>(`SELECT * FROM (${side(RECORDS)} UNION ALL ${side(DOMAIN)}) LIMIT 1`, {
    tenant: tenantId,
    id,
  });
  return rows[0] ?? null;
};

/** the tenant's anonymization rules, pending or completed (reads hide at once): PostgreSQL's audit.anonymizations */
export const anonymizationRules = async (q: Queryable, tenantId: string): Promise<AnonymizationRule[]> =>
  (
    await q.query<{ user_id: string; digests: string[]; lengths: number[] }>(
      'SELECT user_id, digests, lengths FROM audit.anonymizations WHERE tenant_id = $1',
      [tenantId],
    )
  ).rows.map((r) => ({ userId: r.user_id, digests: r.digests, lengths: r.lengths }));

/** the tenant's export job, or null (another tenant's id included) */
export const findExportJob = async (q: Queryable, tenantId: string, jobId: string): Promise<ExportJobRecord | null> =>
  (
    await q.query<ExportJobRecord>('SELECT * FROM audit.export_jobs WHERE tenant_id = $1 AND id = $2', [
      tenantId,
      jobId,
    ])
  ).rows[0] ?? null;
