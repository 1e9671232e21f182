import pgUtils from 'pg/lib/utils.js';
import type { Tx } from '../postgres/db';
import type { Statement } from './projection';

const { prepareValue, escapeLiteral } = pgUtils;

/** a bound value as an SQL literal, typed where PostgreSQL could not infer it from a bare string */
const literal = (value: unknown): string => {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'number' || typeof value === 'bigint') return Number.isFinite(Number(value)) ? String(value) : escapeLiteral(String(value));
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (Buffer.isBuffer(value)) return `'\\x${value.toString('hex')}'::bytea`;
  if (value instanceof Date) return `${escapeLiteral(value.toISOString())}::timestamptz`;
  if (Array.isArray(value)) return escapeLiteral(String(prepareValue(value)));
  if (typeof value === 'object') return `${escapeLiteral(JSON.stringify(value))}::jsonb`;
  return escapeLiteral(String(value));
};

/** the statement's text with its $n placeholders replaced by literals */
export const inline = (s: Statement): string => s.text.replace(/\$(\d+)/g, (_, n: string) => literal(s.values[Number(n) - 1]));

/**
 * Executes a projection batch's statements in one round trip (one multi-statement query with the
 * values as escaped literals, inside a savepoint): catch-up and inline projections are bound by
 * round trips, not by PostgreSQL. Should a statement not survive inlining (a type PostgreSQL can
 * infer for a parameter but not for a bare literal), the batch is rolled back to the savepoint and
 * run statement by statement with bound parameters, so the result is the same either way.
 */
export const executeBatch = async (tx: Tx, statements: Statement[]): Promise<void> => {
  if (statements.length === 0) return;
  if (statements.length === 1) {
    await tx.query(statements[0]!.text, statements[0]!.values);
    return;
  }
  try {
    await tx.query(`SAVEPOINT projection_batch;\n${statements.map(inline).join(';\n')};\nRELEASE SAVEPOINT projection_batch`);
  } catch {
    await tx.query('ROLLBACK TO SAVEPOINT projection_batch');
    for (const s of statements) await tx.query(s.text, s.values);
    await tx.query('RELEASE SAVEPOINT projection_batch');
  }
};
