import pgUtils from 'pg/lib/utils.js';

/**
 * Statements with their values written in as escaped literals, so that several can travel in one
 * simple-protocol round trip (which takes no bound parameters). Every string goes through
 * quoteLiteral; nothing is interpolated raw.
 *
 * Safe by construction, whatever the session's standard_conforming_strings says:
 *  - a literal written here is a plain '…' only when it has no backslash (read the same under
 *    either setting), else an E'…' string, whose escapes do not depend on the setting;
 *  - a $n is replaced only where PostgreSQL's lexer would read a parameter: never inside a string,
 *    a quoted identifier, a comment or a dollar-quoted body of the statement's text, nor as the
 *    tail of an identifier (a$1); a plain '…' of the text with a backslash in it is refused, since
 *    where it ends would depend on the setting;
 *  - a NUL is refused, as PostgreSQL refuses it in text;
 *  - a placeholder without a value is refused, as a bind message would be.
 */
export interface BoundStatement {
  text: string;
  values: unknown[];
  /** a prepared statement's name (pipelined): parsed and planned once per connection */
  name?: string;
}

/**
 * A string as an SQL literal: quotes doubled, and in E'' form with backslashes doubled when there
 * are any, as pg's escapeLiteral does, but with two regular-expression passes instead of a
 * character-by-character copy (these strings are kilobytes of JSON on the write path). A NUL
 * cannot be in PostgreSQL text and would cut the query short on the wire: refused. The leading
 * space of the E form keeps it from joining an identifier before it (xE'…' would be x, then E'…').
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
  // E form: '\x…' would be a hex escape, not bytea's hex format, with standard_conforming_strings off
  if (Buffer.isBuffer(value)) return ` E'\\\\x${value.toString('hex')}'::bytea`;
  if (value instanceof Date) return `${quoteLiteral(value.toISOString())}::timestamptz`;
  // pg writes an array as the text of a PostgreSQL array literal
  if (Array.isArray(value)) return quoteLiteral(pgUtils.prepareValue(value) as string);
  if (typeof value === 'object') return `${quoteLiteral(JSON.stringify(value))}::jsonb`;
  if (typeof value === 'string') return quoteLiteral(value);
  throw new TypeError(`a ${typeof value} cannot be a bound value`);
};

/** characters that continue an identifier in PostgreSQL's lexer (ident_cont: letters, digits, _, $, any non-ASCII) */
const IDENT_CONT = /[A-Za-z0-9_$\u0080-\uffff]/;
/** a dollar quote's opening tag: $$ or $tag$ (tag: ident_start, then ident_cont without $) */
const DOLLAR_TAG = /\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/y;
const PARAMETER = /\$(\d+)/y;

/** where a '…' starting at `at` ends (the index after its closing quote) */
const endOfString = (text: string, at: number, escapes: boolean): number => {
  for (let i = at + 1; i < text.length; i++) {
    const c = text[i];
    if (c === '\\') {
      if (!escapes)
        throw new Error(
          `a '…' in the statement's text holds a backslash: its end would depend on standard_conforming_strings (write E'…' or bind the value)`,
        );
      i++;
    } else if (c === "'") {
      if (text[i + 1] !== "'") return i + 1;
      i++;
    }
  }
  throw new Error('the statement ends inside a string');
};

/**
 * The statement's text with its $n placeholders replaced by literals. The text is read as
 * PostgreSQL's lexer reads it, so a "$1" inside a string, a quoted identifier, a comment or a
 * dollar-quoted body stays as written; values are inserted, never read again.
 */
export const inline = (s: BoundStatement): string => {
  const text = s.text;
  let out = '';
  let copied = 0;
  let i = 0;
  while (i < text.length) {
    const c = text.charAt(i);
    const prev = text.charAt(i - 1);
    if (c === "'") {
      // E'…' (not the tail of an identifier such as "type'…'"): backslash escapes
      const escapes = /[eE]/.test(prev) && !IDENT_CONT.test(text.charAt(i - 2));
      i = endOfString(text, i, escapes);
    } else if (c === '"') {
      const end = text.indexOf('"', i + 1);
      if (end < 0) throw new Error('the statement ends inside a quoted identifier');
      // "" inside a quoted identifier is a quote: the next search starts after it
      i = end + 1;
      while (text[i] === '"') {
        const next = text.indexOf('"', i + 1);
        if (next < 0) throw new Error('the statement ends inside a quoted identifier');
        i = next + 1;
      }
    } else if (c === '-' && text[i + 1] === '-') {
      const end = text.indexOf('\n', i);
      i = end < 0 ? text.length : end + 1;
    } else if (c === '/' && text[i + 1] === '*') {
      // block comments nest in PostgreSQL
      let depth = 1;
      i += 2;
      while (depth > 0) {
        if (i >= text.length) throw new Error('the statement ends inside a comment');
        const opens = text.startsWith('/*', i);
        const closes = !opens && text.startsWith('*/', i);
        depth += opens ? 1 : closes ? -1 : 0;
        i += opens || closes ? 2 : 1;
      }
    } else if (c === '$' && !IDENT_CONT.test(prev)) {
      PARAMETER.lastIndex = i;
      const parameter = PARAMETER.exec(text);
      DOLLAR_TAG.lastIndex = i;
      const tag = parameter ? null : DOLLAR_TAG.exec(text);
      if (parameter) {
        const n = Number(parameter[1]);
        if (n < 1 || n > s.values.length)
          throw new Error(`$${parameter[1]} has no value (the statement has ${s.values.length})`);
        out += text.slice(copied, i) + literal(s.values[n - 1]);
        i += parameter[0].length;
        copied = i;
      } else if (tag) {
        const end = text.indexOf(tag[0], i + tag[0].length);
        if (end < 0) throw new Error('the statement ends inside a dollar-quoted string');
        i = end + tag[0].length;
      } else i++;
    } else i++;
  }
  return out + text.slice(copied);
};
