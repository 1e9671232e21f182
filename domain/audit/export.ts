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

export const CSV_COLUMNS = ['id', 'timestamp', 'tenantId', 'action', 'entityType', 'entityId', 'actorId', 'actorIp', 'actorUserAgent', 'traceId', 'before', 'after', 'meta'] as const;

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
  item: (record: AuditRecordView, index: number): string => (format === 'csv'
    ? `${CSV_COLUMNS.map((c) => cell(record[c])).join(',')}\r\n`
    : `${index === 0 ? '\n' : ',\n'}${JSON.stringify(record)}`),
  tail: (count: number) => (format === 'csv' ? '' : count === 0 ? ']\n' : '\n]\n'),
});
