import { describe, expect, it } from 'vitest';
import type { Model } from '../../../domain/data/catalog';
import type { WriteContext } from '../../../domain/data/database-errors';
import { databaseErrorFields, readProblem, writeProblem } from '../../../domain/data/database-errors';
import { calendarDateProblem, instantProblem } from '../../../domain/shared/instant';

const col = (name: string, o: Partial<Model['columns'][number]> = {}): Model['columns'][number] => ({
  name,
  type: 'text',
  udt: 'text',
  nullable: true,
  pk: false,
  default: null,
  maxLength: null,
  domain: null,
  ...o,
});
const model = (name: string, o: Partial<Model> = {}): Model => ({
  name,
  table: name,
  schema: 'module_crm',
  autoApi: true,
  columns: [col('tenant_id'), col('id', { pk: true })],
  indexes: [],
  relations: [],
  checks: [],
  ...o,
});
const contacts = model('contacts', {
  columns: [col('tenant_id'), col('id', { pk: true }), col('email'), col('score', { domain: 'percent' })],
  indexes: [{ name: 'contacts_email_key', columns: ['tenant_id', 'email'] }],
  checks: [{ name: 'score_positive', columns: ['score'] }],
});
const notes = model('notes', {
  relations: [
    {
      name: 'contact',
      fk: 'contact_id',
      references: 'contacts.id',
      target: 'contacts',
      targetColumn: 'id',
      constraint: 'notes_contact_id_fkey',
      onDelete: 'no action',
      onUpdate: 'no action',
    },
  ],
});
const write = (m: Model, verb: WriteContext['verb'], fields: string[]): WriteContext => ({
  models: [contacts, notes],
  model: m,
  verb,
  fields,
});
const answer = (e: Parameters<typeof writeProblem>[0], w: WriteContext) => {
  const problem = writeProblem(e, w);
  return problem && { status: problem.status, suffix: problem.suffix, errors: problem.errors };
};

describe("PostgreSQL's refusals of a generated write, mapped in one place", () => {
  it('a unique key names its fields but tenant_id: 409 conflict', () => {
    expect(
      answer(
        { code: '23505', constraint: 'contacts_email_key', table: 'contacts' },
        write(contacts, 'created', ['email']),
      ),
    ).toEqual({
      status: 409,
      suffix: 'conflict',
      errors: [{ field: 'email', message: expect.any(String), code: 'UNIQUE' }],
    });
  });

  it('a foreign key of the row written is 422 naming the field; the same key failing on a delete is 409 naming the relation', () => {
    const e = { code: '23503', constraint: 'notes_contact_id_fkey', table: 'notes' };
    expect(answer(e, write(notes, 'created', ['contact_id', 'body']))).toMatchObject({
      status: 422,
      suffix: 'validation-error',
      errors: [{ field: 'contact_id', code: 'REFERENCE_NOT_FOUND' }],
    });
    expect(answer(e, write(contacts, 'deleted', []))).toMatchObject({
      status: 409,
      suffix: 'conflict',
      errors: [{ field: 'notes.contact_id', code: 'STILL_REFERENCED' }],
    });
  });

  it('NOT NULL, table and domain checks, and values a column cannot hold are 400 validation-error on the field', () => {
    expect(
      answer({ code: '23502', column: 'email', table: 'contacts' }, write(contacts, 'updated', ['email'])),
    ).toMatchObject({
      status: 400,
      errors: [{ field: 'email', code: 'NOT_NULL' }],
    });
    expect(
      answer({ code: '23514', constraint: 'score_positive', table: 'contacts' }, write(contacts, 'created', ['score'])),
    ).toMatchObject({
      status: 400,
      errors: [{ field: 'score', code: 'CHECK_VIOLATION' }],
    });
    expect(
      answer(
        { code: '23514', constraint: 'percent_check', dataType: 'percent' },
        write(contacts, 'created', ['score']),
      ),
    ).toMatchObject({
      status: 400,
      errors: [{ field: 'score', code: 'CHECK_VIOLATION' }],
    });
    expect(answer({ code: '22008' }, write(contacts, 'created', ['email']))).toMatchObject({
      status: 400,
      errors: [{ field: 'body', code: 'INVALID_VALUE' }],
    });
  });

  it('leaves every other error as it is (a deadlock stays retryable), and reads only PostgreSQL errors', () => {
    expect(writeProblem({ code: '40P01' }, write(contacts, 'created', []))).toBeNull();
    expect(databaseErrorFields(new Error('boom'))).toBeNull();
    expect(databaseErrorFields({ code: 'ECONNRESET' })).toBeNull();
    expect(databaseErrorFields({ code: '23505', constraint: 'c', table: 't' })).toMatchObject({
      code: '23505',
      constraint: 'c',
    });
    expect(readProblem({ code: '22003' })?.status).toBe(400);
    expect(readProblem({ code: '57014' })).toBeNull();
  });
});

describe('instants and dates PostgreSQL holds', () => {
  it('takes years 0001 to 9999 and offsets within ±15:59, nothing else', () => {
    expect(instantProblem('0001-01-01T00:00:00Z')).toBeNull();
    expect(instantProblem('9999-12-31T23:59:59+15:59')).toBeNull();
    expect(instantProblem('0000-06-01T00:00:00Z')).not.toBeNull();
    expect(instantProblem('2026-01-01T00:00:00+16:00')).not.toBeNull();
    expect(instantProblem('2026-01-01T00:00:00-23:59')).not.toBeNull();
    expect(instantProblem('yesterday 2020')).not.toBeNull();
    expect(calendarDateProblem('0001-01-01')).toBeNull();
    expect(calendarDateProblem('0000-01-01')).not.toBeNull();
    expect(calendarDateProblem('10000-01-01')).not.toBeNull();
    expect(calendarDateProblem('2026-02-30')).not.toBeNull();
  });
});
