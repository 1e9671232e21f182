import pgUtils from 'pg/lib/utils.js';

/**
 * Statements with their values written in as escaped literals, so that several can travel in one
 * simple-protocol round trip (which takes no bound parameters). Every string goes through
 * quoteLiteral; nothing is interpolated raw.
 */
export interface BoundStatement {
  text: string;
  values: unknown[];
}

/**
 * A string as an SQL literal: quotes doubled, and in E'' form with backslashes doubled when there
 * are any, as pg's escapeLiteral does, but with two regular-expression passes instead of a
 * character-by-character copy (these strings are kilobytes of JSON on the write path). A NUL
 * cannot be in PostgreSQL text and would cut the query short on the wire: refused.
 */
export const quoteLiteral = (value: string): string => {
  if (value.includes('\0')) throw new Error('a text value contains a NUL character, which PostgreSQL cannot store');
  const quoted = value.replace(/'/g, "''");
  return value.includes('\\') ? ` E'${quoted.replace(/\\/g, '\\\\')}'` : `'${quoted}'`;
};

/** a bound value as an SQL literal, typed where PostgreSQL could not infer it from a bare string */
export const literal = (value: unknown): string => {
  if (value === null || value === undefined) return 'NULL';
  // negatives in parentheses: "x -$1" must not become the comment "x --5"
  if (typeof value === 'number' || typeof value === 'bigint')
    return !Number.isFinite(Number(value)) ? quoteLiteral(String(value)) : value < 0 ? `(${value})` : String(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (Buffer.isBuffer(value)) return `'\\x${value.toString('hex')}'::bytea`;
  if (value instanceof Date) return `${quoteLiteral(value.toISOString())}::timestamptz`;
  // pg writes an array as the text of a PostgreSQL array literal
  if (Array.isArray(value)) return quoteLiteral(pgUtils.prepareValue(value) as string);
  if (typeof value === 'object') return `${quoteLiteral(JSON.stringify(value))}::jsonb`;
  if (typeof value === 'string') return quoteLiteral(value);
  throw new TypeError(`a ${typeof value} cannot be a bound value`);
};

/** the statement's text with its $n placeholders replaced by literals */
export const inline = (s: BoundStatement): string =>
  s.text.replace(/\$(\d+)/g, (_, n: string) => literal(s.values[Number(n) - 1]));
