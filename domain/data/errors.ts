import type { FieldError } from '../shared/errors';
import { defineErrors } from '../shared/errors';

/** The data layer's refusals (spec 002, Data model and Limits). */
export const dataErrors = defineErrors({
  modelNotFound: () => ({
    status: 404,
    suffix: 'not-found',
    title: 'Not found',
    detail: 'The module has no such model.',
  }),
  recordNotFound: () => ({
    status: 404,
    suffix: 'not-found',
    title: 'Not found',
    detail: 'The record does not exist.',
  }),
  recordExists: () => ({ status: 409, suffix: 'conflict', title: 'Conflict', detail: 'The record exists already.' }),
  /** a unique index or constraint of the table (scoped to the tenant by the registry) */
  uniqueConflict: (fields: string[]) => ({
    status: 409,
    suffix: 'conflict',
    title: 'Conflict',
    detail: `Another record has the same ${fields.join(', ')}.`,
    errors: fields.map((field) => ({ field, message: 'another record has this value', code: 'UNIQUE' })),
  }),
  /**
   * A foreign key names no row of the tenant: the same answer whether the row does not exist or is
   * another tenant's (the key is checked within the tenant), and nothing of the value in it.
   */
  referenceNotFound: (field: string, target: string) => ({
    status: 422,
    suffix: 'validation-error',
    title: 'Validation failed',
    detail: `${field} names no ${target} record.`,
    errors: [{ field, message: `no ${target} record has this value`, code: 'REFERENCE_NOT_FOUND' }],
  }),
  /** a delete (or a change of a referenced key) that records of another model still reference, when their key restricts it */
  stillReferenced: (source: string, fk: string) => ({
    status: 409,
    suffix: 'conflict',
    title: 'Conflict',
    detail: `Records of ${source} still reference this record (${source}.${fk}).`,
    errors: [{ field: `${source}.${fk}`, message: 'records still reference this one', code: 'STILL_REFERENCED' }],
  }),
  invalid: (errors: FieldError[]) => ({
    status: 400,
    suffix: 'validation-error',
    title: 'Validation failed',
    detail: 'The record is not valid.',
    errors,
  }),
  invalidQuery: (errors: FieldError[]) => ({
    status: 400,
    suffix: 'validation-error',
    title: 'Validation failed',
    detail: 'The query is not valid.',
    errors,
  }),
  recordTooLarge: (limit: number) => ({
    status: 400,
    suffix: 'validation-error',
    title: 'Validation failed',
    detail: `A record is at most ${limit} bytes.`,
    errors: [{ field: 'body', message: `at most ${limit} bytes`, code: 'TOO_LARGE' }],
  }),
  fieldTooLarge: (field: string, limit: number) => ({
    status: 400,
    suffix: 'validation-error',
    title: 'Validation failed',
    detail: `A JSON field is at most ${limit} bytes.`,
    errors: [{ field, message: `at most ${limit} bytes`, code: 'TOO_LARGE' }],
  }),
  tooManyFilters: (limit: number) => ({
    status: 422,
    suffix: 'too-many-filters',
    title: 'Too many filters',
    detail: `A list takes at most ${limit} filters.`,
  }),
  relationTooDeep: (limit: number) => ({
    status: 422,
    suffix: 'relation-too-deep',
    title: 'Relation too deep',
    detail: `Relations expand at most ${limit} levels deep.`,
  }),
  /** the module's last migration failed (spec 002: "module not loaded") */
  moduleInError: (migrationError: string | null) => ({
    status: 503,
    suffix: 'service-unavailable',
    title: 'Service unavailable',
    detail: 'The module is not loaded: its last migration failed.',
    extensions: { status: 'error', migrationError },
  }),
});

/** spec 002, Limits: record size / JSONB size, relation depth / filters */
export const DATA_LIMITS = {
  recordBytes: 1024 * 1024,
  jsonFieldBytes: 256 * 1024,
  relationDepth: 2,
  filters: 10,
} as const;
