import type { AuditRow, ChainName } from '../../domain/audit/rows';
import { CHAINS, DOMAIN, RECORDS } from '../../domain/audit/rows';
import type { AnalyticsStore } from '../../infra/clickhouse/port';
import { chTime, tableOf } from '../../infra/clickhouse/port';

// ---------------------------------------------------------------------------------------------
// The audit store and the audit view of the domain (ClickHouse), as the audit commands read them:
// the consumer's dedup and chain tails, the verifier's pages, the archiver's months and ranges. The
// read API reads the same tables through projections/audit/queries.ts. Every query filters by tenant
// but the cross-tenant sweeps of the verifier and the archiver.

// UInt64 seq arrives as a string (output_format_json_quote_64bit_integers)
const COLUMNS =
  'tenant_id, id, seq, action, entity_type, entity_id, actor_id, actor_ip, actor_user_agent, before, after, meta, trace_id, timestamp, prev_hash, hash';

/**
 * A chunk of a tenant's stored rows in [since, until), oldest first, after a keyset position (both
 * tables read as one; the domain side one row per id).
 */
export const storedRows = async (
  ch: AnalyticsStore,
  tenantId: string,
  o: { since: Date; until: Date; after?: { timestamp: string; id: string }; limit: number },
): Promise<AuditRow[]> => {
  const params: Record<string, unknown> = {
    tenant: tenantId,
    since: chTime(o.since),
    until: chTime(o.until),
    limit: o.limit,
  };
  let where =
    'tenant_id = {tenant:String} AND timestamp >= {since:DateTime64(3)} AND timestamp < {until:DateTime64(3)}';
  if (o.after) {
    where += ' AND (timestamp, id) > ({afterTs:DateTime64(3)}, {afterId:String})';
    params.afterTs = chTime(o.after.timestamp);
    params.afterId = o.after.id;
  }
  const side = (table: string, dedup: boolean) =>
    `(SELECT ${COLUMNS} FROM ${tableOf(ch, table)} WHERE ${where} ORDER BY timestamp ASC, id ASC${dedup ? ' LIMIT 1 BY id' : ''} LIMIT {limit:UInt32})`;
  return ch.query<AuditRow>(
    `SELECT * FROM (${side(RECORDS, false)} UNION ALL ${side(DOMAIN, true)}) ORDER BY timestamp ASC, id ASC LIMIT {limit:UInt32}`,
    params,
  );
};

/** how many records of the tenant name the user (as actor or as the entity), financial ones apart */
export const recordsOfUser = async (
  ch: AnalyticsStore,
  tenantId: string,
  userId: string,
): Promise<{ financial: number; other: number }> => {
  const side = (table: string) => `(SELECT id, action FROM ${tableOf(ch, table)} WHERE tenant_id = {tenant:String}
    AND (actor_id = {user:String} OR startsWith(actor_id, {impersonated:String}) OR entity_id = {user:String}) LIMIT 1 BY id)`;
  const [row] = await ch.query<{ financial: string; other: string }>(
    `SELECT countIf(startsWith(action, 'money.')) AS financial, countIf(NOT startsWith(action, 'money.')) AS other
     FROM (${side(RECORDS)} UNION ALL ${side(DOMAIN)})`,
    { tenant: tenantId, user: userId, impersonated: `${userId} (by ` },
  );
  return { financial: Number(row?.financial ?? 0), other: Number(row?.other ?? 0) };
};

/** ids among these that the audit store holds already (the consumer's dedup), for records of these tenants and times */
export const storedIds = async (
  ch: AnalyticsStore,
  rows: readonly { tenant_id: string; id: string; timestamp: string }[],
): Promise<Set<string>> => {
  if (rows.length === 0) return new Set();
  const times = rows.map((r) => Date.parse(r.timestamp));
  const found = await ch.query<{ id: string }>(
    `SELECT id FROM ${tableOf(ch, RECORDS)} WHERE tenant_id IN {tenants:Array(String)}
       AND timestamp BETWEEN {from:DateTime64(3)} AND {to:DateTime64(3)} AND id IN {ids:Array(String)}`,
    {
      tenants: [...new Set(rows.map((r) => r.tenant_id))],
      from: chTime(new Date(Math.min(...times))),
      to: chTime(new Date(Math.max(...times))),
      ids: rows.map((r) => r.id),
    },
  );
  return new Set(found.map((r) => r.id));
};

/** the newest link of each tenant's log chain beyond what PostgreSQL remembers (rows of a batch whose head update was lost) */
export const chainTails = async (
  ch: AnalyticsStore,
  heads: readonly { tenantId: string; seq: number }[],
): Promise<Map<string, { seq: number; hash: string }>> => {
  if (heads.length === 0) return new Map();
  const params: Record<string, unknown> = {};
  const clauses = heads.map((h, i) => {
    params[`t${i}`] = h.tenantId;
    params[`s${i}`] = h.seq;
    return `(tenant_id = {t${i}:String} AND seq > {s${i}:UInt64})`;
  });
  const rows = await ch.query<{ tenant_id: string; last_seq: string; last_hash: string }>(
    `SELECT tenant_id, max(seq) AS last_seq, argMax(hash, seq) AS last_hash FROM ${tableOf(ch, RECORDS)} WHERE ${clauses.join(' OR ')} GROUP BY tenant_id`,
    params,
  );
  return new Map(rows.map((r) => [r.tenant_id, { seq: Number(r.last_seq), hash: r.last_hash }]));
};

/** a page of one tenant's chain in seq order (the verifier); from the oldest retained link when after is null */
export const chainPage = async (
  ch: AnalyticsStore,
  chainName: ChainName,
  tenantId: string,
  afterSeq: number | null,
  limit: number,
): Promise<AuditRow[]> =>
  ch.query<AuditRow>(
    `SELECT ${COLUMNS} FROM ${tableOf(ch, CHAINS[chainName])} WHERE tenant_id = {tenant:String}${afterSeq === null ? '' : ' AND seq > {after:UInt64}'}
     ORDER BY seq LIMIT 1 BY seq, id LIMIT {limit:UInt32}`,
    { tenant: tenantId, after: afterSeq ?? 0, limit },
  );

/** the tenants of a chain and how many records each has; none when its table does not exist (the domain view before its first preparation) */
export const chainTenants = async (
  ch: AnalyticsStore,
  chainName: ChainName,
): Promise<{ tenantId: string; records: number }[]> => {
  const exists = await ch.query(`SELECT 1 FROM system.tables WHERE database = {db:String} AND name = {name:String}`, {
    db: ch.database,
    name: CHAINS[chainName],
  });
  if (exists.length === 0) return [];
  return (
    await ch.query<{ tenant_id: string; n: string }>(
      `SELECT tenant_id, uniqExact(id) AS n FROM ${tableOf(ch, CHAINS[chainName])} GROUP BY tenant_id ORDER BY tenant_id`,
    )
  ).map((r) => ({ tenantId: r.tenant_id, records: Number(r.n) }));
};

/** per tenant and month (UTC) before `before`, how many records the hot store holds */
export const monthlyCounts = async (
  ch: AnalyticsStore,
  before: Date,
): Promise<{ tenantId: string; month: string; records: number }[]> => {
  const side = (table: string) =>
    `(SELECT tenant_id, id, timestamp FROM ${tableOf(ch, table)} WHERE timestamp < {before:DateTime64(3)})`;
  const rows = await ch.query<{ tenant_id: string; month: string; n: string }>(
    `SELECT tenant_id, formatDateTime(timestamp, '%Y-%m') AS month, uniqExact(id) AS n FROM (${side(RECORDS)} UNION ALL ${side(DOMAIN)})
     GROUP BY tenant_id, month ORDER BY tenant_id, month`,
    { before: chTime(before) },
  );
  return rows.map((r) => ({ tenantId: r.tenant_id, month: r.month, records: Number(r.n) }));
};
