import pgUtils from 'pg/lib/utils.js';

const { prepareValue, escapeLiteral } = pgUtils;

/**
 * Statements with their values written in as escaped literals, so that several can travel in one
 * simple-protocol round trip (which takes no bound parameters). Every value goes through
 * escapeLiteral; nothing is interpolated raw.
 */
export interface BoundStatement {
  text: string;
  values: unknown[];
}

/** a bound value as an SQL literal, typed where PostgreSQL could not infer it from a bare string */
export const literal = (value: unknown): string => {
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
export const inline = (s: BoundStatement): string => s.text.replace(/\$(\d+)/g, (_, n: string) => literal(s.values[Number(n) - 1]));
