import { z } from 'zod';
import { commonErrors } from '../shared/errors';
import { auditErrors } from './errors';
import type { AuditRecordView } from './record';

const DAY_MS = 86_400_000;

/**
 * Where an export reads from (spec 002): a range within the hot store is streamed at once, and may
 * span at most the hot retention (else export-range-too-large); a range reaching further back than
 * the hot store holds is restored from the cold archives by an export job (202 with a jobId).
 */
export const planExport = (o: { since: Date; until: Date; now: Date; hotDays: number }): 'hot' | 'cold' => {
  if (o.until.getTime() <= o.since.getTime()) {
    throw commonErrors.validation([{ field: 'until', message: 'until must be after since', code: 'INVALID_RANGE' }]);
  }
  if (o.since.getTime() < o.now.getTime() - o.hotDays * DAY_MS) return 'cold';
  if (o.until.getTime() - o.since.getTime() > o.hotDays * DAY_MS) throw auditErrors.exportRangeTooLarge(o.hotDays);
  return 'hot';
};

export type ExportFormat = 'json' | 'csv';

export const CSV_COLUMNS = [
  'id',
  'timestamp',
  'tenantId',
  'action',
  'entityType',
  'entityId',
  'actorId',
  'actorIp',
  'actorUserAgent',
  'traceId',
  'before',
  'after',
  'meta',
] as const;

const cell = (value: unknown): string => {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
};

/**
 * The pieces of an export file, so a writer can stream it record by record: JSON is one array
 * (a record per line), CSV is RFC 4180 with a header line, JSON members as JSON text in their
 * cells and an empty cell for null.
 */
export const exportFormat = (format: ExportFormat) => ({
  contentType: format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8',
  extension: format,
  head: format === 'csv' ? `${CSV_COLUMNS.join(',')}\r\n` : '[',
  item: (record: AuditRecordView, index: number): string =>
    format === 'csv'
      ? `${CSV_COLUMNS.map((c) => cell(record[c])).join(',')}\r\n`
      : `${index === 0 ? '\n' : ',\n'}${JSON.stringify(record)}`,
  tail: (count: number) => (format === 'csv' ? '' : count === 0 ? ']\n' : '\n]\n'),
});

export const ExportJob = z.object({
  jobId: z.string(),
  status: z.enum(['queued', 'running', 'completed', 'failed']),
  format: z.enum(['json', 'csv']),
  since: z.string(),
  until: z.string(),
  records: z.number().nullable(),
  error: z.string().nullable(),
  createdAt: z.string(),
  completedAt: z.string().nullable(),
});

/** an export job as GET /audit/export/jobs/:jobId shows it (spec 002: cold exports) */
export interface ExportJobView {
  jobId: string;
  status: 'queued' | 'running' | 'completed' | 'failed';
  format: ExportFormat;
  since: string;
  until: string;
  records: number | null;
  error: string | null;
  createdAt: string;
  completedAt: string | null;
}

/** a row of audit.export_jobs */
export interface ExportJobRecord {
  id: string;
  tenant_id: string;
  format: ExportFormat;
  since: Date;
  until: Date;
  status: ExportJobView['status'];
  object_key: string | null;
  records: string | null;
  error: string | null;
  created_at: Date;
  completed_at: Date | null;
}

export const jobView = (r: ExportJobRecord): ExportJobView => ({
  jobId: r.id,
  status: r.status,
  format: r.format,
  since: r.since.toISOString(),
  until: r.until.toISOString(),
  records: r.records === null ? null : Number(r.records),
  error: r.error,
  createdAt: r.created_at.toISOString(),
  completedAt: r.completed_at?.toISOString() ?? null,
});
