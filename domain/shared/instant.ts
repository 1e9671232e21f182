import { z } from 'zod';

/**
 * Points in time and calendar dates as a request may give them, limited to what PostgreSQL holds
 * (timestamptz and date): years 0001 to 9999 and UTC offsets within ±15:59. Checked before any
 * query, so that no value reaches one that PostgreSQL would refuse (a 400 on the field, never a
 * 500). Pure: the API layers (infra/http/instant.ts) and the contexts' domains use the same rules.
 */
const ISO_8601 = z.iso.datetime({ offset: true });
const ISO_DATE = z.iso.date();
/** the UTC offset of an ISO 8601 timestamp: Z or ±HH:MM */
const OFFSET = /(?:Z|([+-])(\d{2}):(\d{2}))$/i;
const FIRST = Date.parse('0001-01-01T00:00:00Z');
const LAST = Date.parse('9999-12-31T23:59:59.999Z');

/** why a text is not an instant PostgreSQL holds, or null when it is one */
export const instantProblem = (text: string): string | null => {
  if (!ISO_8601.safeParse(text).success)
    return 'must be an ISO 8601 timestamp with a UTC offset, such as 2026-01-31T12:00:00Z';
  const offset = OFFSET.exec(text);
  if (offset?.[1] && (Number(offset[2]) > 15 || Number(offset[3]) > 59)) return 'the UTC offset must be within ±15:59';
  const ms = Date.parse(text);
  if (!Number.isFinite(ms) || ms < FIRST || ms > LAST)
    return 'must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z';
  return null;
};

/** why a text is not a calendar date PostgreSQL holds (YYYY-MM-DD, 0001 to 9999), or null when it is one */
export const calendarDateProblem = (text: string): string | null => {
  if (!ISO_DATE.safeParse(text).success) return 'must be an ISO 8601 date, such as 2026-01-31';
  if (text.startsWith('0000')) return 'must be between 0001-01-01 and 9999-12-31';
  return null;
};

/**
 * A point in time (since, until, a page token, a timestamp field): an ISO 8601 timestamp with its
 * UTC offset, as PostgreSQL timestamptz holds it, normalized to UTC (…Z).
 */
export const Instant = z
  .string()
  .max(64, { abort: true })
  .superRefine((text, ctx) => {
    const problem = instantProblem(text);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .transform((text) => new Date(Date.parse(text)).toISOString())
  .meta({
    type: 'string',
    format: 'date-time',
    description: 'ISO 8601 with a UTC offset within ±15:59, years 0001 to 9999',
  });

/** a calendar date (a date field or filter): YYYY-MM-DD, years 0001 to 9999 */
export const CalendarDate = z
  .string()
  .max(10, { abort: true })
  .superRefine((text, ctx) => {
    const problem = calendarDateProblem(text);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .meta({ type: 'string', format: 'date', description: 'ISO 8601 date, years 0001 to 9999' });
