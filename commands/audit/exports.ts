import { Readable } from 'node:stream';
import type { Overlay } from '../../domain/audit/anonymization';
import { redact } from '../../domain/audit/anonymization';
import type { ExportFormat, ExportJobRecord, ExportJobView } from '../../domain/audit/export';
import { exportFormat, jobView } from '../../domain/audit/export';
import { monthKey, monthsOf } from './months';
import type { AuditRecordView } from '../../domain/audit/record';
import { isoOf, viewOf } from '../../domain/audit/rows';
import type { Kernel } from '../../infra/kernel';
import type { QueueShape } from '../../infra/queue';
import { claimItems } from '../../infra/queue';
import { storedRows } from './lookups';
import { hasPendingAnonymization, loadOverlay } from './anonymize';
import { readArchive } from './archive';

const CHUNK = 5000;

export interface ExportRange {
  tenantId: string;
  since: Date;
  until: Date;
}

/** the hot records of a range, oldest first, a chunk of rows in memory at a time */
async function* hotRecords(
  kernel: Kernel,
  range: ExportRange,
  overlay: Overlay | null,
): AsyncGenerator<AuditRecordView> {
  const ch = await kernel.analytics();
  let after: { timestamp: string; id: string } | undefined;
  for (;;) {
    const rows = await storedRows(ch, range.tenantId, { since: range.since, until: range.until, after, limit: CHUNK });
    for (const row of rows) yield redact(viewOf(row), overlay);
    if (rows.length < CHUNK) return;
    const last = rows[rows.length - 1]!;
    after = { timestamp: isoOf(last.timestamp), id: last.id };
  }
}

/** a range restored month by month: from the month's cold archive when there is one, else from the hot store */
async function* restoredRecords(
  kernel: Kernel,
  range: ExportRange,
  overlay: Overlay | null,
  signal?: AbortSignal,
): AsyncGenerator<AuditRecordView> {
  const { rows } = await kernel.db.query<{ month: string; object_key: string }>(
    'SELECT month, object_key FROM audit.archives WHERE tenant_id = $1',
    [range.tenantId],
  );
  const archives = new Map(rows.map((r) => [r.month, r.object_key]));
  for (const month of monthsOf(range.since, range.until)) {
    signal?.throwIfAborted();
    const end = new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth() + 1, 1));
    const slice = {
      ...range,
      since: new Date(Math.max(month.getTime(), range.since.getTime())),
      until: new Date(Math.min(end.getTime(), range.until.getTime())),
    };
    const key = archives.get(monthKey(month));
    if (!key) {
      for await (const record of hotRecords(kernel, slice, overlay)) {
        signal?.throwIfAborted();
        yield record;
      }
      continue;
    }
    for await (const row of readArchive(kernel, key)) {
      signal?.throwIfAborted();
      const t = Date.parse(row.timestamp);
      if (t >= slice.since.getTime() && t < slice.until.getTime()) yield redact(viewOf(row), overlay);
    }
  }
}

/** an export file as a byte stream: head, one record at a time, tail */
const encode = (
  records: AsyncIterable<AuditRecordView>,
  format: ExportFormat,
  onDone?: (count: number) => void,
): Readable => {
  const f = exportFormat(format);
  return Readable.from(
    (async function* () {
      yield f.head;
      let count = 0;
      for await (const record of records) yield f.item(record, count++);
      yield f.tail(count);
      onDone?.(count);
    })(),
  );
};

/** GET /audit/export of a hot range: the file, streamed */
export const streamHotExport = async (kernel: Kernel, range: ExportRange, format: ExportFormat): Promise<Readable> =>
  encode(hotRecords(kernel, range, await loadOverlay(kernel, range.tenantId)), format);

/**
 * Waits while an anonymization of the tenant is still being applied (spec 002: an export blocks
 * until pending anonymizations are done), at most `maxWaitMs`; answers whether none is left.
 */
export const anonymizationsSettled = async (kernel: Kernel, tenantId: string, maxWaitMs: number): Promise<boolean> => {
  // real elapsed time, not the platform's clock: the request really waits (a test's fixed clock would never let it end)
  const deadline = performance.now() + maxWaitMs;
  for (;;) {
    if (!(await hasPendingAnonymization(kernel.db, tenantId))) return true;
    if (performance.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
};

type JobRow = ExportJobRecord;

/** audit.export_jobs as a queue of the kernel's (infra/queue.ts): one job at a time, oldest first */
const EXPORT_JOBS: QueueShape = { table: 'audit.export_jobs', key: ['id'] };

export const createExportJob = async (
  kernel: Kernel,
  range: ExportRange,
  format: ExportFormat,
  requestedBy: string,
): Promise<ExportJobView> => {
  const {
    rows: [row],
  } = await kernel.db.query<JobRow>(
    `INSERT INTO audit.export_jobs (id, tenant_id, requested_by, format, since, until, status, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, 'queued', $7) RETURNING *`,
    [kernel.ids.next(), range.tenantId, requestedBy, format, range.since, range.until, kernel.clock.now()],
  );
  return jobView(row!);
};

/**
 * Runs the oldest queued export job (restore from the cold archives, overlay applied, file written
 * to the object store). A job waits while its tenant has an anonymization pending. Returns whether
 * it ran one. signal: the worker is stopping — the job goes back to the queue, and the next worker
 * (of any process) takes it up again from the beginning.
 */
export const runNextExportJob = async (kernel: Kernel, signal?: AbortSignal): Promise<boolean> => {
  const [job] = await claimItems<JobRow>(kernel.db, EXPORT_JOBS, {
    // a job running for over an hour lost its worker: its lease passed
    due: `(item.status = 'queued' OR (item.status = 'running' AND item.started_at < now() - interval '1 hour'))
      AND NOT EXISTS (SELECT 1 FROM audit.anonymizations a WHERE a.tenant_id = item.tenant_id AND a.status = 'pending')`,
    order: 'item.created_at',
    set: `status = 'running', started_at = now()`,
    returning: 't.*',
    values: [],
    limit: 1,
  });
  if (!job) return false;
  const key = `audit/exports/${job.tenant_id}/${job.id}.${job.format}`;
  try {
    const range = { tenantId: job.tenant_id, since: job.since, until: job.until };
    let records = 0;
    const file = encode(
      restoredRecords(kernel, range, await loadOverlay(kernel, job.tenant_id), signal),
      job.format,
      (n) => {
        records = n;
      },
    );
    await kernel.engines.objects.put(key, file, { contentType: exportFormat(job.format).contentType });
    await kernel.db.query(
      `UPDATE audit.export_jobs SET status = 'completed', object_key = $2, records = $3, completed_at = now() WHERE id = $1`,
      [job.id, key, records],
    );
  } catch (error) {
    if (signal?.aborted) {
      await kernel.db.query(`UPDATE audit.export_jobs SET status = 'queued', started_at = NULL WHERE id = $1`, [
        job.id,
      ]);
      kernel.logger.info({ jobId: job.id }, 'audit export job stopped with its worker; queued again');
      return true;
    }
    kernel.logger.error({ err: error, jobId: job.id }, 'audit export job failed');
    await kernel.db.query(
      `UPDATE audit.export_jobs SET status = 'failed', error = $2, completed_at = now() WHERE id = $1`,
      [job.id, 'the export could not be written; request it again'],
    );
  }
  return true;
};

/** deletes finished export jobs and their files after `days` */
export const purgeExportJobs = async (kernel: Kernel, days: number): Promise<number> => {
  const { rows } = await kernel.db.query<{ id: string; object_key: string | null }>(
    `DELETE FROM audit.export_jobs WHERE status IN ('completed', 'failed') AND completed_at < now() - make_interval(days => $1) RETURNING id, object_key`,
    [days],
  );
  for (const r of rows) if (r.object_key) await kernel.engines.objects.delete(r.object_key);
  return rows.length;
};
