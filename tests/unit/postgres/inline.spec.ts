import { describe, expect, it } from 'vitest';
import { inline, literal, quoteLiteral } from '../../../infra/postgres/inline';

const s = (text: string, ...values: unknown[]) => inline({ text, values });

describe('the inliner reads the statement as PostgreSQL does', () => {
  it('given a $1 inside a string of the text, when inlined, then only the placeholder outside it is replaced', () => {
    expect(s(`SELECT '$1', $1, 'it''s $2'`, 'v')).toBe(`SELECT '$1', 'v', 'it''s $2'`);
  });

  it('given $1 in an E string with an escaped quote, then the string ends where PostgreSQL ends it', () => {
    expect(s(`SELECT E'a\\' $1', $1`, 7)).toBe(`SELECT E'a\\' $1', 7`);
  });

  it('given $1 in quoted identifiers, comments and dollar-quoted bodies, then they stay as written', () => {
    const text = `SELECT 1 AS "a""$1", $1 -- $1 here
      /* $1 /* nested $1 */ still $1 */ , $$ $1 $$, $fn$ body $1 $fn$, $2`;
    expect(s(text, 'x', 'y')).toBe(text.replace(', $1 --', ", 'x' --").replace('$fn$, $2', "$fn$, 'y'"));
  });

  it('given a $1 that ends an identifier (a$1), then it is part of the identifier', () => {
    expect(s('SELECT a$1, $1', 5)).toBe('SELECT a$1, 5');
  });

  it('replaces $10 as one placeholder, not $1 followed by 0', () => {
    expect(s('SELECT $1, $10', ...Array.from({ length: 10 }, (_, i) => i + 1))).toBe('SELECT 1, 10');
  });

  it('refuses a placeholder without a value, as a bind message would', () => {
    expect(() => s('SELECT $1, $2', 1)).toThrow(/\$2 has no value/);
    expect(() => s('SELECT $0')).toThrow(/\$0 has no value/);
  });

  it('refuses a plain string of the text with a backslash: its end would depend on standard_conforming_strings', () => {
    expect(() => s(`SELECT 'a\\', $1`, 1)).toThrow(/standard_conforming_strings/);
  });

  it('refuses a text that ends inside a string, identifier, comment or dollar quote', () => {
    for (const text of [`SELECT 'a`, `SELECT "a`, 'SELECT /* a', 'SELECT $$ a', `SELECT E'a\\'`])
      expect(() => s(text)).toThrow(/ends inside/);
  });
});

describe('a value as a literal', () => {
  it('doubles quotes so a value cannot end its literal', () => {
    expect(s('UPDATE t SET name = $1 WHERE id = $2', "x'; DROP TABLE t; --", 7)).toBe(
      `UPDATE t SET name = 'x''; DROP TABLE t; --' WHERE id = 7`,
    );
  });

  it('writes backslashes in the E form, whose escapes do not depend on standard_conforming_strings', () => {
    expect(quoteLiteral('a\\b')).toBe(" E'a\\\\b'");
    expect(quoteLiteral("\\'")).toBe(" E'\\\\'''");
  });

  it('leaves a value that looks like a placeholder alone: values are not read again', () => {
    expect(s('SELECT $1, $2', '$2', 'x')).toBe(`SELECT '$2', 'x'`);
  });

  it('refuses a NUL, as PostgreSQL refuses it in text, in a string, an array and a JSON value', () => {
    expect(() => literal('a\0b')).toThrow(/NUL/);
    expect(() => literal(['a\0b'])).toThrow(/NUL/);
    // JSON writes it as \u0000, which jsonb refuses itself
    expect(literal({ a: '\0' })).toBe(` E'{"a":"\\\\u0000"}'::jsonb`);
  });

  it('keeps unicode as it is', () => {
    expect(literal('zß水🙂')).toBe(`'zß水🙂'`);
  });

  it('types values PostgreSQL cannot infer from a bare string; bytea in the E form', () => {
    expect(s('SELECT $1, $2, $3, $4, $5', null, true, new Date(0), { a: 1 }, Buffer.from([1, 255]))).toBe(
      `SELECT NULL, true, '1970-01-01T00:00:00.000Z'::timestamptz, '{"a":1}'::jsonb,  E'\\\\x01ff'::bytea`,
    );
  });

  it('keeps a negative number from making a comment of a minus before it', () => {
    expect(s('SELECT 1 -$1', -5)).toBe('SELECT 1 -(-5)');
  });
});
