import type { AuditFilter } from '../../domain/audit/filters';
import type { AuditRow } from './rows';
import type { AnalyticsStore } from '../../infra/clickhouse/port';
import { tableOf } from '../../infra/clickhouse/port';

/**
 * Reads of the audit views. A tenant's records live in two tables — the audit store
 * (audit_records, from platform.audit.events) and the audit view of the domain (audit_domain, a
 * view onto the projection's active generation) — read as one: each side ordered and limited on
 * its own (ClickHouse reads in the order of the key (tenant_id, timestamp, id) and stops early),
 * then merged. The domain side takes one row per id (a replayed batch may have left a duplicate
 * that ReplacingMergeTree has not merged yet). Every query filters by tenant.
 */
export const RECORDS = 'audit_records';
export const DOMAIN = 'audit_domain';
export const CHAINS = { log: RECORDS, domain: DOMAIN } as const;
export type ChainName = keyof typeof CHAINS;

// UInt64 seq arrives as a string (output_format_json_quote_64bit_integers)
const COLUMNS = 'tenant_id, id, seq, action, entity_type, entity_id, actor_id, actor_ip, actor_user_agent, before, after, meta, trace_id, timestamp, prev_hash, hash';

/** ISO 8601 → the text ClickHouse binds to DateTime64(3) */
export const chTime = (t: Date | string): string => new Date(t).toISOString().replace('T', ' ').replace('Z', '');

export interface Keyset { timestamp: string; id: string }

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
  if (f.action && 'exact' in f.action) { where.push('action = {action:String}'); params.action = f.action.exact; }
  if (f.action && 'prefix' in f.action) { where.push('startsWith(action, {actionPrefix:String})'); params.actionPrefix = f.action.prefix; }
  if (f.entityType !== undefined) { where.push('entity_type = {entityType:String}'); params.entityType = f.entityType; }
  if (f.entityId !== undefined) { where.push('entity_id = {entityId:String}'); params.entityId = f.entityId; }
  if (f.actorId !== undefined) { where.push('actor_id = {actorId:String}'); params.actorId = f.actorId; }
  if (f.since) { where.push('timestamp >= {since:DateTime64(3)}'); params.since = chTime(f.since); }
  if (f.until) { where.push('timestamp < {until:DateTime64(3)}'); params.until = chTime(f.until); }
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
    `SELECT * FROM (${side(RECORDS, false)} UNION ALL ${side(DOMAIN, true)}) ORDER BY timestamp ${dir}, id ${dir} LIMIT {limit:UInt32}`, params);
};

export const findRecord = async (ch: AnalyticsStore, tenantId: string, id: string): Promise<AuditRow | null> => {
  const side = (table: string) => `(SELECT ${COLUMNS} FROM ${tableOf(ch, table)} WHERE tenant_id = {tenant:String} AND id = {id:String} LIMIT 1)`;
  const rows = await ch.query<AuditRow>(`SELECT * FROM (${side(RECORDS)} UNION ALL ${side(DOMAIN)}) LIMIT 1`, { tenant: tenantId, id });
  return rows[0] ?? null;
};

/** how many records of the tenant name the user (as actor or as the entity), financial ones apart */
export const recordsOfUser = async (ch: AnalyticsStore, tenantId: string, userId: string): Promise<{ financial: number; other: number }> => {
  const side = (table: string) => `(SELECT id, action FROM ${tableOf(ch, table)} WHERE tenant_id = {tenant:String}
    AND (actor_id = {user:String} OR startsWith(actor_id, {impersonated:String}) OR entity_id = {user:String}) LIMIT 1 BY id)`;
  const [row] = await ch.query<{ financial: string; other: string }>(
    `SELECT countIf(startsWith(action, 'money.')) AS financial, countIf(NOT startsWith(action, 'money.')) AS other
     FROM (${side(RECORDS)} UNION ALL ${side(DOMAIN)})`, { tenant: tenantId, user: userId, impersonated: `${userId} (by ` });
  return { financial: Number(row?.financial ?? 0), other: Number(row?.other ?? 0) };
};

/** ids among these that the audit store holds already (the consumer's dedup), for records of these tenants and times */
export const storedIds = async (ch: AnalyticsStore, rows: readonly { tenant_id: string; id: string; timestamp: string }[]): Promise<Set<string>> => {
  if (rows.length === 0) return new Set();
  const times = rows.map((r) => Date.parse(r.timestamp));
  const found = await ch.query<{ id: string }>(
    `SELECT id FROM ${tableOf(ch, RECORDS)} WHERE tenant_id IN {tenants:Array(String)}
       AND timestamp BETWEEN {from:DateTime64(3)} AND {to:DateTime64(3)} AND id IN {ids:Array(String)}`,
    { tenants: [...new Set(rows.map((r) => r.tenant_id))], from: chTime(new Date(Math.min(...times))), to: chTime(new Date(Math.max(...times))), ids: rows.map((r) => r.id) });
  return new Set(found.map((r) => r.id));
};

/** the newest link of each tenant's log chain beyond what PostgreSQL remembers (rows of a batch whose head update was lost) */
export const chainTails = async (ch: AnalyticsStore, heads: readonly { tenantId: string; seq: number }[]): Promise<Map<string, { seq: number; hash: string }>> => {
  if (heads.length === 0) return new Map();
  const params: Record<string, unknown> = {};
  const clauses = heads.map((h, i) => {
    params[`t${i}`] = h.tenantId;
    params[`s${i}`] = h.seq;
    return `(tenant_id = {t${i}:String} AND seq > {s${i}:UInt64})`;
  });
  const rows = await ch.query<{ tenant_id: string; last_seq: string; last_hash: string }>(
    `SELECT tenant_id, max(seq) AS last_seq, argMax(hash, seq) AS last_hash FROM ${tableOf(ch, RECORDS)} WHERE ${clauses.join(' OR ')} GROUP BY tenant_id`, params);
  return new Map(rows.map((r) => [r.tenant_id, { seq: Number(r.last_seq), hash: r.last_hash }]));
};

/** a page of one tenant's chain in seq order (the verifier); from the oldest retained link when after is null */
export const chainPage = async (ch: AnalyticsStore, chainName: ChainName, tenantId: string, afterSeq: number | null, limit: number): Promise<AuditRow[]> =>
  ch.query<AuditRow>(
    `SELECT ${COLUMNS} FROM ${tableOf(ch, CHAINS[chainName])} WHERE tenant_id = {tenant:String}${afterSeq === null ? '' : ' AND seq > {after:UInt64}'}
     ORDER BY seq LIMIT 1 BY seq, id LIMIT {limit:UInt32}`,
    { tenant: tenantId, after: afterSeq ?? 0, limit });

/** the tenants of a chain and how many records each has; none when its table does not exist (the domain view before its first preparation) */
export const chainTenants = async (ch: AnalyticsStore, chainName: ChainName): Promise<{ tenantId: string; records: number }[]> => {
  const exists = await ch.query(`SELECT 1 FROM system.tables WHERE database = {db:String} AND name = {name:String}`, { db: ch.database, name: CHAINS[chainName] });
  if (exists.length === 0) return [];
  return (await ch.query<{ tenant_id: string; n: string }>(`SELECT tenant_id, uniqExact(id) AS n FROM ${tableOf(ch, CHAINS[chainName])} GROUP BY tenant_id ORDER BY tenant_id`))
    .map((r) => ({ tenantId: r.tenant_id, records: Number(r.n) }));
};

/** per tenant and month (UTC) before `before`, how many records the hot store holds */
export const monthlyCounts = async (ch: AnalyticsStore, before: Date): Promise<{ tenantId: string; month: string; records: number }[]> => {
  const side = (table: string) => `(SELECT tenant_id, id, timestamp FROM ${tableOf(ch, table)} WHERE timestamp < {before:DateTime64(3)})`;
  const rows = await ch.query<{ tenant_id: string; month: string; n: string }>(
    `SELECT tenant_id, formatDateTime(timestamp, '%Y-%m') AS month, uniqExact(id) AS n FROM (${side(RECORDS)} UNION ALL ${side(DOMAIN)})
     GROUP BY tenant_id, month ORDER BY tenant_id, month`, { before: chTime(before) });
  return rows.map((r) => ({ tenantId: r.tenant_id, month: r.month, records: Number(r.n) }));
};
