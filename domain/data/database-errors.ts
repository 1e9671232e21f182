import type { DomainError } from '../shared/errors';
import type { Model, Relation } from './catalog';
import { dataErrors } from './errors';

/**
 * The data layer's one mapping of PostgreSQL's refusals to its problems: what a module's table
 * refuses (integrity, class 23) and what it cannot hold (data exceptions, class 22) is the
 * caller's to fix, never a 500 — a unique key 409 naming its fields, a reference to no row of the
 * tenant 422 naming the field (the same answer for a missing row and another tenant's: the keys are
 * scoped to the tenant), a row still referenced 409 naming the relation, NOT NULL and checks 400
 * with errors[]. PostgreSQL's own text never reaches the answer. Any other error is not a refusal
 * (null: the caller rethrows it, and deadlocks stay retryable).
 */

/** the fields of a PostgreSQL error (pg's DatabaseError) the mapping reads */
export interface DatabaseErrorFields {
  code: string;
  constraint?: string;
  table?: string;
  column?: string;
  dataType?: string;
}

/** what the failing statements were doing: the model written, how, and the fields the request set */
export interface WriteContext {
  models: Model[];
  model: Model;
  verb: 'created' | 'updated' | 'deleted';
  fields: string[];
}

const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** the SQLSTATE and names of an error PostgreSQL raised, or null for anything else */
export const databaseErrorFields = (error: unknown): DatabaseErrorFields | null => {
  if (typeof error !== 'object' || error === null) return null;
  const e = error as Record<string, unknown>;
  const code = text(e.code);
  if (!code || !/^[0-9A-Z]{5}$/.test(code)) return null;
  return {
    code,
    constraint: text(e.constraint),
    table: text(e.table),
    column: text(e.column),
    dataType: text(e.dataType),
  };
};

const UNIQUE = '23505';
const FOREIGN_KEY = ['23503', '23001'];
const NOT_NULL = '23502';
const CHECK = '23514';
const EXCLUSION = '23P01';

/** the columns a violated index or check reads, but tenant_id; the fields of the request first when it names some */
const columnsOf = (w: WriteContext, e: DatabaseErrorFields): string[] => {
  const named = e.column
    ? [e.column]
    : e.dataType
      ? w.model.columns.filter((c) => c.domain === e.dataType).map((c) => c.name)
      : [
          ...(w.model.indexes.find((i) => i.name === e.constraint)?.columns ?? []),
          ...(w.model.checks.find((c) => c.name === e.constraint)?.columns ?? []),
        ];
  const columns = named.filter((c) => c !== 'tenant_id');
  const set = columns.filter((c) => w.fields.includes(c));
  if (set.length) return set;
  return columns.length ? columns : ['body'];
};

/** the relation whose foreign key is the violated constraint, with the model holding it */
const relationOf = (w: WriteContext, e: DatabaseErrorFields): { source: Model; relation: Relation } | null => {
  for (const source of w.models) {
    if (e.table && source.table !== e.table) continue;
    const relation = source.relations.find((r) => r.constraint === e.constraint);
    if (relation) return { source, relation };
  }
  return null;
};

/**
 * A foreign key failed either on the row written (it names no row of the tenant: 422) or on the
 * rows that reference the row deleted or re-keyed (they restrict it: 409).
 */
const referenceProblem = (w: WriteContext, e: DatabaseErrorFields): DomainError => {
  const found = relationOf(w, e);
  const outgoing = found
    ? w.verb !== 'deleted' && found.source === w.model && w.fields.includes(found.relation.fk)
    : w.verb !== 'deleted' && e.table === w.model.table;
  if (outgoing)
    return dataErrors.referenceNotFound(found?.relation.fk ?? 'body', found?.relation.target ?? 'referenced');
  return dataErrors.stillReferenced(found?.source.name ?? e.table ?? 'another model', found?.relation.fk ?? 'key');
};

/** the problem a write's PostgreSQL error stands for, or null when it is no refusal of the caller's values */
export const writeProblem = (e: DatabaseErrorFields, w: WriteContext): DomainError | null => {
  if (e.code === UNIQUE || e.code === EXCLUSION) return dataErrors.uniqueConflict(columnsOf(w, e));
  if (FOREIGN_KEY.includes(e.code)) return referenceProblem(w, e);
  if (e.code === NOT_NULL)
    return dataErrors.invalid(
      columnsOf(w, e).map((field) => ({ field, message: 'must not be null', code: 'NOT_NULL' })),
    );
  if (e.code === CHECK)
    return dataErrors.invalid(
      columnsOf(w, e).map((field) => ({
        field,
        message: `must satisfy the check ${e.constraint ?? 'of its type'}`,
        code: 'CHECK_VIOLATION',
      })),
    );
  if (e.code.startsWith('22') || e.code.startsWith('23'))
    return dataErrors.invalid(
      columnsOf(w, e).map((field) => ({ field, message: 'a value the column cannot hold', code: 'INVALID_VALUE' })),
    );
  return null;
};

/** a list's query that PostgreSQL could not run on its values (class 22): 400, never a 500 */
export const readProblem = (e: DatabaseErrorFields): DomainError | null =>
  e.code.startsWith('22')
    ? dataErrors.invalidQuery([
        { field: e.column ?? 'query', message: 'a value the column cannot hold', code: 'INVALID_VALUE' },
      ])
    : null;
