import { describe, expect, it } from 'vitest';
import { pgbenchStatement } from '../../../bench/peers/pgbench';

/**
 * The pgbench peer of bench/eventstore.ts runs the statement our append sent, as a pgbench script
 * line: its bound values must reach pgbench as node-postgres sends them, or the peer runs another
 * statement than ours.
 */
describe('pgbenchStatement', () => {
  it('given a recorded statement, when made a pgbench line, then each $n is its own variable with the text pg binds', () => {
    const { sql, defines } = pgbenchStatement({
      text: 'SELECT $1, $12::text[], $2::jsonb, $11::int WHERE $1 = $1',
      values: ['s-1', null, 3, 4, 5, 6, 7, 8, 9, 10, 11, ['a', 'b "c"']],
    });
    // $1 is not the start of $12, nor of $11
    expect(sql).toBe('SELECT :p1, :p12::text[], NULL::jsonb, :p11::int WHERE :p1 = :p1;');
    expect(defines.p1).toBe('s-1');
    expect(defines.p12).toBe('{"a","b \\"c\\""}');
    expect(defines.p11).toBe('11');
    expect(defines).not.toHaveProperty('p2');
  });

  it('given replacements, when made a pgbench line, then those parameters take the text given and define nothing', () => {
    const values = ['x', 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ['u']];
    const { sql, defines } = pgbenchStatement(
      { text: 'UPDATE t SET v = $2 WHERE id = $1 AND ids = $12::uuid[] AND w = $10;', values },
      { 1: ':sid', 12: '(SELECT array_agg(gen_random_uuid()) FROM generate_series(1, 1))' },
    );
    expect(sql).toBe(
      'UPDATE t SET v = :p2 WHERE id = :sid AND ids = (SELECT array_agg(gen_random_uuid()) FROM generate_series(1, 1))::uuid[] AND w = :p10;',
    );
    expect(defines).not.toHaveProperty('p1');
    expect(defines).not.toHaveProperty('p12');
    expect(defines.p10).toBe('9');
  });
});
