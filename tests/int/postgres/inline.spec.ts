import { afterAll, describe, expect, it } from 'vitest';
import { createPool } from '../../../infra/postgres/db';
import { inline } from '../../../infra/postgres/inline';
import { requireEnv } from '../../support/env';

/**
 * The inliner (infra/postgres/inline.ts) against the real PostgreSQL: a statement with its values
 * written in as literals reads back exactly what the same statement with bound parameters does,
 * under either setting of standard_conforming_strings.
 */
const pool = createPool(requireEnv('TEST_DATABASE_URL'), { max: 2, applicationName: 'platform-inline-test' });
afterAll(() => pool.end());

const MEGABYTE = `{"note":"${'ab\\\'"$1 水'.repeat(110_000)}"}`.slice(0, 1_048_576);
const VALUES: [string, unknown, string][] = [
  ['a $1 inside a string', 'costs $1, or $2', 'text'],
  ['backslashes', 'C:\\dir\\x41\\\\n\\', 'text'],
  ['quotes', `it's "quoted" ''twice''`, 'text'],
  ['unicode', 'zß水🙂\u200b', 'text'],
  ['a megabyte of text', MEGABYTE, 'text'],
  ['JSON with quotes and backslashes', { s: `a'b\\c"d$1` }, 'jsonb'],
  ['an array of awkward strings', ['a"b', 'c\\d', "e'f", '{g,h}', 'NULL'], 'text[]'],
  ['bytea', Buffer.from([0, 92, 39, 255, 36, 49]), 'bytea'],
];

const statement = (type: string) => `SELECT '$1' AS marker, $1::${type} AS v -- $1 in a comment
  , $tag$ $1 $tag$ AS body`;

describe('a statement inlined and the same statement bound', () => {
  for (const scs of ['on', 'off'])
    for (const [name, value, type] of VALUES)
      it(`given ${name}, with standard_conforming_strings ${scs}, then both read back the same`, async () => {
        const client = await pool.connect();
        try {
          await client.query(`SET standard_conforming_strings = ${scs}`);
          const bound = await client.query(statement(type), [value]);
          const inlined = await client.query(inline({ text: statement(type), values: [value] }));
          expect(inlined.rows).toEqual(bound.rows);
          expect(bound.rows[0].marker).toBe('$1');
          expect(bound.rows[0].body).toBe(' $1 ');
        } finally {
          await client.query('RESET standard_conforming_strings');
          client.release();
        }
      });

  it('given a NUL in a text value, then both are refused', async () => {
    await expect(pool.query('SELECT $1::text', ['a\0b'])).rejects.toThrow();
    expect(() => inline({ text: 'SELECT $1::text', values: ['a\0b'] })).toThrow(/NUL/);
  });

  it('given a NUL in a JSON value, then jsonb refuses both', async () => {
    await expect(pool.query('SELECT $1::jsonb', [{ a: '\0' }])).rejects.toThrow(/unsupported Unicode escape/);
    await expect(pool.query(inline({ text: 'SELECT $1', values: [{ a: '\0' }] }))).rejects.toThrow(
      /unsupported Unicode escape/,
    );
  });
});
