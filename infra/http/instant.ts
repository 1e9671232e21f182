import { z } from 'zod';

const ISO_8601 = z.iso.datetime({ offset: true });
/** the UTC offset of an ISO 8601 timestamp: Z or ±HH:MM */
const OFFSET = /(?:Z|([+-])(\d{2}):(\d{2}))$/i;
const FIRST = Date.parse('0001-01-01T00:00:00Z');
const LAST = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * A point in time in a query (since, until, a page token): an ISO 8601 timestamp with its UTC
 * offset, as PostgreSQL timestamptz holds it — offsets within ±15:59 and instants from year 1 to
 * 9999 — normalized to UTC (…Z), so that no value reaches a query that PostgreSQL would refuse.
 */
export const Instant = z
  .string()
  .max(64)
  .superRefine((text, ctx) => {
    if (!ISO_8601.safeParse(text).success) {
      ctx.addIssue({
        code: 'custom',
        message: 'must be an ISO 8601 timestamp with a UTC offset, such as 2026-01-31T12:00:00Z',
      });
      return;
    }
    const offset = OFFSET.exec(text);
    if (offset?.[1] && (Number(offset[2]) > 15 || Number(offset[3]) > 59)) {
      ctx.addIssue({ code: 'custom', message: 'the UTC offset must be within ±15:59' });
      return;
    }
    const ms = Date.parse(text);
    if (!Number.isFinite(ms) || ms < FIRST || ms > LAST)
      ctx.addIssue({ code: 'custom', message: 'must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z' });
  })
  .transform((text) => new Date(Date.parse(text)).toISOString())
  .meta({
    type: 'string',
    format: 'date-time',
    description: 'ISO 8601 with a UTC offset within ±15:59, years 0001 to 9999',
  });
