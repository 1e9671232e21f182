import { z } from 'zod';
import { JsonValue } from '../shared/json';
import type { FieldError } from '../shared/errors';
import { CalendarDate, Instant } from '../shared/instant';
import type { Column, Model } from './catalog';
import { DATA_LIMITS, dataErrors } from './errors';

/**
 * The zod schemas of a model's records, derived from its table's columns: tenant_id and id are the
 * platform's (never in a body); a NOT NULL column without a default is required on create; PATCH
 * takes any subset; an unknown field is refused. Sizes (spec 002, Limits): a record at most 1 MB, a
 * JSON field at most 256 KB.
 */
const SYSTEM_COLUMNS = new Set(['tenant_id', 'id']);
export const writableColumns = (m: Model): Column[] => m.columns.filter((c) => !SYSTEM_COLUMNS.has(c.name));

const INT_RANGE: Record<string, [number, number]> = {
  int2: [-32768, 32767],
  int4: [-2147483648, 2147483647],
  int8: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
};

export const isJsonColumn = (c: Pick<Column, 'udt'>): boolean => c.udt === 'json' || c.udt === 'jsonb';

const valueSchema = (c: Column): z.ZodType => {
  const range = INT_RANGE[c.udt];
  if (range) return z.number().int().min(range[0]).max(range[1]);
  switch (c.udt) {
    case 'text':
    case 'citext':
      return z.string().max(DATA_LIMITS.recordBytes);
    case 'varchar':
    case 'bpchar':
      return z.string().max(c.maxLength ?? DATA_LIMITS.recordBytes);
    case 'numeric':
    case 'float4':
    case 'float8':
      return z.number();
    case 'bool':
      return z.boolean();
    case 'uuid':
      return z.uuid();
    // what PostgreSQL holds (years 0001 to 9999, offsets within ±15:59), never a value it refuses
    case 'timestamptz':
    case 'timestamp':
      return Instant;
    case 'date':
      return CalendarDate;
    // JSON null is SQL NULL (statements.ts): a NOT NULL column takes any JSON value but null
    case 'json':
    case 'jsonb':
      return c.nullable ? JsonValue : JsonValue.refine((v) => v !== null, 'must not be null');
    default:
      return c.udt.startsWith('_') ? z.array(z.unknown()) : z.unknown();
  }
};

const fieldSchema = (c: Column, required: boolean): z.ZodType => {
  const base = c.nullable ? valueSchema(c).nullable() : valueSchema(c);
  return required ? base : base.optional();
};

export const createSchema = (m: Model) =>
  z.strictObject(
    Object.fromEntries(writableColumns(m).map((c) => [c.name, fieldSchema(c, !c.nullable && c.default === null)])),
  );

export const patchSchema = (m: Model) =>
  z
    .strictObject(Object.fromEntries(writableColumns(m).map((c) => [c.name, fieldSchema(c, false)])))
    .refine((o) => Object.keys(o).length > 0, 'a change names at least one field');

const issuesOf = (error: z.ZodError): FieldError[] =>
  error.issues.map((i) => ({
    field: i.code === 'unrecognized_keys' ? i.keys.join(',') : i.path.join('.') || 'body',
    message: i.code === 'unrecognized_keys' ? 'not a field of the model' : i.message,
    code: i.code === 'unrecognized_keys' ? 'UNKNOWN_FIELD' : i.code.toUpperCase(),
  }));

/** a body checked against the model: the values to write, or a 400 */
export const validateRecord = (m: Model, body: unknown, mode: 'create' | 'patch'): Record<string, unknown> => {
  if (Buffer.byteLength(JSON.stringify(body ?? null)) > DATA_LIMITS.recordBytes)
    throw dataErrors.recordTooLarge(DATA_LIMITS.recordBytes);
  const parsed = (mode === 'create' ? createSchema(m) : patchSchema(m)).safeParse(body);
  if (!parsed.success) throw dataErrors.invalid(issuesOf(parsed.error));
  const values = parsed.data as Record<string, unknown>;
  for (const c of writableColumns(m).filter(isJsonColumn)) {
    if (values[c.name] !== undefined && Buffer.byteLength(JSON.stringify(values[c.name])) > DATA_LIMITS.jsonFieldBytes)
      throw dataErrors.fieldTooLarge(c.name, DATA_LIMITS.jsonFieldBytes);
  }
  return values;
};
