import type { FieldError } from '../shared/errors';
import { calendarDateProblem, instantProblem } from '../shared/instant';
import type { Column, Model } from './catalog';
import { DATA_LIMITS, dataErrors } from './errors';

/**
 * A list's query string: filters `<column>=v` or `<column>[op]=v` (eq, ne, gt, gte, lt, lte, like,
 * is_null), `sort=<column>` or `sort=-<column>`, `expand=<relation>[.<relation>]`, page_size and
 * page_token. Values are bound parameters, checked against the column's type first (a 400, never a
 * failing query); tenant_id is not a field (the tenant is the token's).
 */
export const OPERATORS = {
  eq: '=',
  ne: '<>',
  gt: '>',
  gte: '>=',
  lt: '<',
  lte: '<=',
  like: 'LIKE',
  is_null: 'IS NULL',
} as const;
export type Operator = keyof typeof OPERATORS;
export interface Filter {
  column: Column;
  op: Operator;
  value: string;
}
export interface ListQuery {
  filters: Filter[];
  sort: { column: Column; desc: boolean };
  expand: string[][];
}

const RESERVED = new Set(['page_size', 'page_token', 'sort', 'expand']);
const KEY = /^([a-z][a-z0-9_]*)(?:\[([a-z_]+)\])?$/;
const FILTERABLE = new Set([
  'text',
  'citext',
  'varchar',
  'bpchar',
  'int2',
  'int4',
  'int8',
  'numeric',
  'float4',
  'float8',
  'bool',
  'uuid',
  'timestamptz',
  'timestamp',
  'date',
]);

/** what a text value of the column must look like, or null when it does (filters and page tokens are checked before any query) */
export const valueProblem = (c: Column, v: string): string | null => {
  if (['int2', 'int4', 'int8'].includes(c.udt)) return /^-?\d{1,18}$/.test(v) ? null : 'an integer';
  if (['numeric', 'float4', 'float8'].includes(c.udt)) return /^-?\d+(\.\d+)?$/.test(v) ? null : 'a number';
  if (c.udt === 'bool') return v === 'true' || v === 'false' ? null : 'true or false';
  if (c.udt === 'uuid')
    return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v) ? null : 'a UUID';
  if (['timestamptz', 'timestamp', 'date'].includes(c.udt))
    return instantProblem(v) === null || calendarDateProblem(v) === null
      ? null
      : 'an ISO 8601 timestamp with a UTC offset within ±15:59, or a date, years 0001 to 9999';
  return v.includes('\0') ? 'text without NUL' : null;
};

/**
 * The value a query binds for a checked text: instants for timestamp columns in UTC and a date as
 * its midnight in UTC, so that no session time zone decides what a filter means; other values as given.
 */
export const boundValue = (c: Column, v: string): string => {
  if (c.udt !== 'timestamptz' && c.udt !== 'timestamp') return v;
  return instantProblem(v) === null ? new Date(Date.parse(v)).toISOString() : `${v}T00:00:00.000Z`;
};

export const parseListQuery = (m: Model, query: Record<string, unknown>): ListQuery => {
  const errors: FieldError[] = [];
  const filters: Filter[] = [];
  const columnOf = (name: string) => (name === 'tenant_id' ? undefined : m.columns.find((c) => c.name === name));
  for (const [key, raw] of Object.entries(query)) {
    if (RESERVED.has(key)) continue;
    const match = KEY.exec(key);
    const column = match ? columnOf(match[1]!) : undefined;
    const op = (match?.[2] ?? 'eq') as Operator;
    if (!match || !column) {
      errors.push({ field: key, message: 'not a field of the model', code: 'UNKNOWN_FIELD' });
      continue;
    }
    if (!Object.hasOwn(OPERATORS, op)) {
      errors.push({ field: key, message: `operators: ${Object.keys(OPERATORS).join(', ')}`, code: 'UNKNOWN_OPERATOR' });
      continue;
    }
    if (!FILTERABLE.has(column.udt)) {
      errors.push({ field: key, message: 'this column cannot be filtered on', code: 'NOT_FILTERABLE' });
      continue;
    }
    for (const value of Array.isArray(raw) ? raw.map(String) : [String(raw)]) {
      const problem =
        op === 'is_null'
          ? value === 'true' || value === 'false'
            ? null
            : 'true or false'
          : op === 'like'
            ? null
            : valueProblem(column, value);
      if (problem) errors.push({ field: key, message: `expected ${problem}`, code: 'INVALID_VALUE' });
      else filters.push({ column, op, value: op === 'like' || op === 'is_null' ? value : boundValue(column, value) });
    }
  }
  if (errors.length) throw dataErrors.invalidQuery(errors);
  if (filters.length > DATA_LIMITS.filters) throw dataErrors.tooManyFilters(DATA_LIMITS.filters);

  const sortText = typeof query.sort === 'string' ? query.sort : 'id';
  const desc = sortText.startsWith('-');
  const sortColumn = columnOf(desc ? sortText.slice(1) : sortText);
  // keyset pages compare (sort, id); NULLs sort last ascending and first descending (PostgreSQL's order)
  if (!sortColumn || !FILTERABLE.has(sortColumn.udt)) {
    throw dataErrors.invalidQuery([
      {
        field: 'sort',
        message: 'sort by a column of the model, -column for descending',
        code: 'INVALID_SORT',
      },
    ]);
  }

  const expandText = typeof query.expand === 'string' && query.expand !== '' ? query.expand.split(',') : [];
  const expand = expandText.map((p) => p.split('.'));
  if (expand.some((path) => path.length > DATA_LIMITS.relationDepth))
    throw dataErrors.relationTooDeep(DATA_LIMITS.relationDepth);
  return { filters, sort: { column: sortColumn, desc }, expand };
};
