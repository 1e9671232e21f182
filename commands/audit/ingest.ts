import type { UnchainedRow } from '../../domain/audit/rows';
import { RECORDS, rowOf } from '../../domain/audit/rows';
import { API_CALLED, recordOfAuditEvent } from '../../domain/audit/sources';
import { decodeEvent } from '../../infra/events/envelope';
import type { AnalyticsStore } from '../../infra/clickhouse/port';
import type { Db } from '../../infra/postgres/db';
import type { ChainHead } from './chain';
import { chainLinks, LINK_FIELDS, START } from './chain';
import { chainTails, storedIds } from './lookups';

export interface IngestOutcome {
  stored: number;
  /** records the store holds already (a redelivery after a restart or a rebalance, a fallback replay) */
  duplicates: number;
  /** values that are not audit records (unknown type, malformed) */
  skipped: number;
}

/**
 * Appends the records of a batch of platform.audit.events to the audit store, each exactly once,
 * in its tenant's `log` hash chain. Under each tenant's advisory lock (session-level: no
 * transaction stays open across the ClickHouse calls), for consumers in several processes share
 * tenants whatever partitions they hold:
 *   1. the tenants' chain heads from PostgreSQL, corrected by what ClickHouse holds beyond them (an
 *      insert whose head update was lost to a crash);
 *   2. records the store holds already are dropped (deduplicated by id, across restarts, rebalances
 *      and fallback replays);
 *   3. the rest are chained and inserted in one statement (one part: all or nothing);
 *   4. the heads are advanced.
 */
export const ingestAuditRecords = async (
  db: Db,
  ch: AnalyticsStore,
  values: readonly string[],
  now: Date,
): Promise<IngestOutcome> => {
  let skipped = 0;
  const seen = new Set<string>();
  const rows: (UnchainedRow & { source: string })[] = [];
  for (const value of values) {
    const event = decodeEvent(value, { source: 'audit' });
    const record = event && recordOfAuditEvent(event);
    if (!record) {
      skipped += 1;
      continue;
    }
    if (seen.has(record.id)) continue;
    seen.add(record.id);
    rows.push({ ...rowOf(record), source: record.action === API_CALLED ? 'api' : 'record' });
  }
  if (rows.length === 0) return { stored: 0, duplicates: values.length - skipped, skipped };
  const tenants = [...new Set(rows.map((r) => r.tenant_id))].sort();
  const client = await db.connect();
  try {
    // one statement takes the locks one after the other in the array's (sorted) order, as every consumer does
    await client.query(
      `SELECT pg_advisory_lock(hashtextextended('audit.chain:' || t, 0)) FROM unnest($1::text[]) AS t`,
      [tenants],
    );
    // under the locks, the heads and the ids already stored are read side by side
    const [heads, existing] = await Promise.all([loadHeads(client, ch, tenants), storedIds(ch, rows)]);
    const fresh = rows.filter((r) => !existing.has(r.id));
    // each row one JSONCompactEachRow line, spliced from the JSON text its hash covers
    const ingestedAt = JSON.stringify(now.toISOString());
    const lines: string[] = [];
    const touched: string[] = [];
    for (const tenant of tenants) {
      const mine = fresh.filter((r) => r.tenant_id === tenant);
      if (mine.length === 0) continue;
      const linked = chainLinks(heads.get(tenant) ?? START, mine);
      heads.set(tenant, linked.head);
      touched.push(tenant);
      const prefix = JSON.stringify(tenant);
      linked.links.forEach((l, i) =>
        lines.push(
          `[${prefix},${l.seq},${JSON.stringify(l.prev_hash)},"${l.hash}",${JSON.stringify(mine[i]!.source)},${ingestedAt},${l.fields}]`,
        ),
      );
    }
    await ch.insertLines(`${ch.database}.${RECORDS}`, LINE_COLUMNS, lines.join('\n'));
    if (touched.length) {
      await client.query(
        `INSERT INTO audit.chain_heads (tenant_id, seq, hash) SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[])
         ON CONFLICT (tenant_id) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash, updated_at = now() WHERE audit.chain_heads.seq < EXCLUDED.seq`,
        [touched, touched.map((t) => heads.get(t)!.seq), touched.map((t) => heads.get(t)!.hash)],
      );
    }
    return { stored: lines.length, duplicates: values.length - skipped - lines.length, skipped };
  } finally {
    await client.query('SELECT pg_advisory_unlock_all()').catch(() => undefined);
    client.release();
  }
};

/** the columns of an ingested line: the links, then the chain's fields as the hash covers them */
const LINE_COLUMNS = ['tenant_id', 'seq', 'prev_hash', 'hash', 'source', 'ingested_at', ...LINK_FIELDS];

const loadHeads = async (
  client: Pick<Db, 'query'>,
  ch: AnalyticsStore,
  tenants: string[],
): Promise<Map<string, ChainHead>> => {
  const { rows } = await client.query<{ tenant_id: string; seq: string; hash: string }>(
    'SELECT tenant_id, seq::text AS seq, hash FROM audit.chain_heads WHERE tenant_id = ANY($1::text[])',
    [tenants],
  );
  const heads = new Map(rows.map((r) => [r.tenant_id, { seq: Number(r.seq), hash: r.hash }]));
  const tails = await chainTails(
    ch,
    tenants.map((t) => ({ tenantId: t, seq: heads.get(t)?.seq ?? 0 })),
  );
  for (const [tenant, tail] of tails) heads.set(tenant, tail);
  return heads;
};
