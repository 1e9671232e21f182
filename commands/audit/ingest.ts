import type { AuditRow, UnchainedRow } from '../../domain/audit/rows';
import { insertable, RECORDS, rowOf } from '../../domain/audit/rows';
import { API_CALLED, recordOfAuditEvent } from '../../domain/audit/sources';
import { decodeEvent } from '../../infra/events/envelope';
import type { AnalyticsStore } from '../../infra/clickhouse/port';
import type { Db } from '../../infra/postgres/db';
import type { ChainHead } from './chain';
import { chain, START } from './chain';
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
    for (const tenant of tenants)
      await client.query(`SELECT pg_advisory_lock(hashtextextended('audit.chain:' || $1, 0))`, [tenant]);
    const heads = await loadHeads(client, ch, tenants);
    const existing = await storedIds(ch, rows);
    const fresh = rows.filter((r) => !existing.has(r.id));
    const chained: (AuditRow & { source: string; ingested_at: string })[] = [];
    for (const tenant of tenants) {
      const mine = fresh.filter((r) => r.tenant_id === tenant);
      if (mine.length === 0) continue;
      const linked = chain(heads.get(tenant) ?? START, mine);
      heads.set(tenant, linked.head);
      linked.rows.forEach((row, i) =>
        chained.push({ ...row, source: mine[i]!.source, ingested_at: now.toISOString() }),
      );
    }
    await ch.insert(
      `${ch.database}.${RECORDS}`,
      chained.map((r) => ({ ...insertable(r), source: r.source, ingested_at: r.ingested_at })),
    );
    const touched = [...new Set(chained.map((r) => r.tenant_id))];
    if (touched.length) {
      await client.query(
        `INSERT INTO audit.chain_heads (tenant_id, seq, hash) SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[])
         ON CONFLICT (tenant_id) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash, updated_at = now() WHERE audit.chain_heads.seq < EXCLUDED.seq`,
        [touched, touched.map((t) => heads.get(t)!.seq), touched.map((t) => heads.get(t)!.hash)],
      );
    }
    return { stored: chained.length, duplicates: values.length - skipped - chained.length, skipped };
  } finally {
    await client.query('SELECT pg_advisory_unlock_all()').catch(() => undefined);
    client.release();
  }
};

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
