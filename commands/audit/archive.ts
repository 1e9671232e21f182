import { createHash } from 'node:crypto';
import { createInterface } from 'node:readline';
import { pipeline, Readable } from 'node:stream';
import { createGunzip, createGzip } from 'node:zlib';
import type { Overlay } from '../../domain/audit/anonymization';
import { redact } from '../../domain/audit/anonymization';
import { monthKey } from './months';
import type { AuditRecordView } from '../../domain/audit/record';
import type { AuditRow } from '../../domain/audit/rows';
import { isoOf, viewOf } from '../../domain/audit/rows';
import type { AnalyticsStore } from '../../infra/clickhouse/port';
import type { Kernel } from '../../infra/kernel';
import { loadOverlay } from './anonymize';
import { monthlyCounts, storedRows } from './lookups';

/**
 * Cold storage (spec 002: hot 90 days, cold 7 years then deleted): one gzip-compressed JSON-lines
 * object per tenant and month, `audit/archive/<tenant>/<yyyy-mm>.jsonl.gz`, each line a stored
 * record with its chain links (`chain`, `seq`, `prev_hash`, `hash`), oldest first. A month is
 * archived once it ended more than 7 days ago (the fallback table keeps late records that long),
 * again whenever the hot store holds more records of it than the archive, and the archive is
 * deleted after AUDIT_COLD_YEARS. audit.archives lists them.
 */
const GRACE_MS = 7 * 86_400_000;
const CHUNK = 5000;

export interface ArchivedRow extends AuditRow {
  /** set when an anonymization rewrote the line: its hash no longer covers its values */
  redacted?: true;
}

/** every write of a month is a new object; the manifest row switches to it, then the old one goes */
export const archiveKey = (tenantId: string, month: string, version: string): string =>
  `audit/archive/${tenantId}/${month}/${version}.jsonl.gz`;

const monthStart = (month: string): Date => new Date(`${month}-01T00:00:00.000Z`);
const nextMonth = (month: string): Date => {
  const d = monthStart(month);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1));
};

/** the stored rows of a tenant's month in the hot store, oldest first, a chunk at a time (under the tenant's overlay, if any) */
async function* hotRows(
  ch: AnalyticsStore,
  tenantId: string,
  since: Date,
  until: Date,
  overlay: Overlay | null,
): AsyncGenerator<ArchivedRow> {
  let after: { timestamp: string; id: string } | undefined;
  for (;;) {
    const rows = await storedRows(ch, tenantId, { since, until, after, limit: CHUNK });
    for (const row of rows) yield overlay ? redactedRow(row, overlay) : row;
    if (rows.length < CHUNK) return;
    const last = rows[rows.length - 1]!;
    after = { timestamp: isoOf(last.timestamp), id: last.id };
  }
}

const writeArchive = async (
  kernel: Kernel,
  tenantId: string,
  month: string,
  rows: AsyncIterable<ArchivedRow>,
): Promise<number> => {
  let count = 0;
  const hash = createHash('sha256');
  const lines = Readable.from(
    (async function* () {
      for await (const row of rows) {
        count += 1;
        yield `${JSON.stringify({ ...row, timestamp: isoOf(row.timestamp) })}\n`;
      }
    })(),
  );
  // A failure of the rows (ClickHouse gone mid-read) ends the gzip stream with it and reaches the
  // store through it; a listener from the start keeps that error for the store to see even if it
  // comes before the store reads (pipe() alone would leave it unhandled: the end of the process).
  const gzip = pipeline(lines, createGzip(), () => undefined);
  gzip.on('error', () => undefined);
  gzip.on('data', (chunk: Buffer) => hash.update(chunk));
  const key = archiveKey(tenantId, month, kernel.ids.next());
  await kernel.engines.objects.put(key, gzip, { contentType: 'application/gzip' });
  const {
    rows: [previous],
  } = await kernel.db.query<{ object_key: string | null }>(
    `WITH old AS (SELECT object_key FROM audit.archives WHERE tenant_id = $1 AND month = $2),
     up AS (INSERT INTO audit.archives (tenant_id, month, object_key, records, sha256, archived_at) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (tenant_id, month) DO UPDATE SET object_key = EXCLUDED.object_key, records = EXCLUDED.records, sha256 = EXCLUDED.sha256, archived_at = EXCLUDED.archived_at)
     SELECT (SELECT object_key FROM old) AS object_key`,
    [tenantId, month, key, count, hash.digest('hex'), kernel.clock.now()],
  );
  if (previous?.object_key) await kernel.engines.objects.delete(previous.object_key);
  return count;
};

/** the rows of an archive, oldest first, streamed */
export async function* readArchive(kernel: Kernel, key: string): AsyncGenerator<ArchivedRow> {
  const lines = createInterface({
    // a read failure of the stored archive fails the lines (pipe() would leave it unhandled)
    input: pipeline(await kernel.engines.objects.get(key), createGunzip(), () => undefined),
    crlfDelay: Infinity,
  });
  for await (const line of lines) if (line.trim()) yield JSON.parse(line) as ArchivedRow;
}

/** archives every closed month whose archive is missing or behind the hot store; returns the months written */
export const archiveClosedMonths = async (kernel: Kernel, now: Date): Promise<string[]> => {
  const ch = await kernel.analytics();
  const closedBefore = new Date(now.getTime() - GRACE_MS);
  const before = new Date(Date.UTC(closedBefore.getUTCFullYear(), closedBefore.getUTCMonth(), 1));
  const { rows } = await kernel.db.query<{ tenant_id: string; month: string; records: string }>(
    'SELECT tenant_id, month, records FROM audit.archives',
  );
  const archived = new Map(rows.map((r) => [`${r.tenant_id} ${r.month}`, Number(r.records)]));
  const written: string[] = [];
  for (const m of await monthlyCounts(ch, before)) {
    if ((archived.get(`${m.tenantId} ${m.month}`) ?? -1) >= m.records) continue;
    // an anonymized user's values never reach cold storage, whenever the month is archived
    await writeArchive(
      kernel,
      m.tenantId,
      m.month,
      hotRows(ch, m.tenantId, monthStart(m.month), nextMonth(m.month), await loadOverlay(kernel, m.tenantId)),
    );
    written.push(`${m.tenantId} ${m.month}`);
  }
  return written;
};

/** deletes the archives older than AUDIT_COLD_YEARS; returns how many */
export const purgeExpiredArchives = async (kernel: Kernel, now: Date): Promise<number> => {
  const limit = monthKey(
    new Date(Date.UTC(now.getUTCFullYear() - kernel.config.AUDIT_COLD_YEARS, now.getUTCMonth(), 1)),
  );
  const { rows } = await kernel.db.query<{ tenant_id: string; month: string; object_key: string }>(
    'SELECT tenant_id, month, object_key FROM audit.archives WHERE month < $1',
    [limit],
  );
  for (const r of rows) {
    await kernel.engines.objects.delete(r.object_key);
    await kernel.db.query('DELETE FROM audit.archives WHERE tenant_id = $1 AND month = $2', [r.tenant_id, r.month]);
  }
  return rows.length;
};

/** the stored row's text members as the overlay shows them (the hash stays: it covers what was archived) */
const redactedRow = (row: ArchivedRow, overlay: Overlay): ArchivedRow => {
  const shown: AuditRecordView = redact(viewOf(row), overlay);
  const text = (v: Record<string, unknown> | null) => (v === null ? null : JSON.stringify(v));
  const next: ArchivedRow = {
    ...row,
    actor_ip: shown.actorIp,
    actor_user_agent: shown.actorUserAgent,
    before: text(shown.before),
    after: text(shown.after),
    meta: text(shown.meta),
  };
  const changed =
    next.actor_ip !== row.actor_ip ||
    next.actor_user_agent !== row.actor_user_agent ||
    next.before !== row.before ||
    next.after !== row.after ||
    next.meta !== row.meta;
  return changed ? { ...next, redacted: true } : row;
};

/** rewrites the tenant's archives under its overlay, so cold storage no longer holds what the overlay hides */
export const redactArchives = async (kernel: Kernel, tenantId: string, overlay: Overlay): Promise<number> => {
  const { rows } = await kernel.db.query<{ month: string; object_key: string }>(
    'SELECT month, object_key FROM audit.archives WHERE tenant_id = $1 ORDER BY month',
    [tenantId],
  );
  for (const r of rows) {
    await writeArchive(
      kernel,
      tenantId,
      r.month,
      (async function* () {
        for await (const row of readArchive(kernel, r.object_key)) yield redactedRow(row, overlay);
      })(),
    );
  }
  return rows.length;
};
