import { describe, expect, it } from 'vitest';
import { inline } from '../../infra/postgres/inline';
import { sql } from '../../infra/projections/projection';

describe('a projection statement inlined for a batch', () => {
  it('escapes quotes so a value cannot end its literal', () => {
    expect(inline(sql('UPDATE t SET name = $1 WHERE id = $2', "x'; DROP TABLE t; --", 7))).toBe(
      `UPDATE t SET name = 'x''; DROP TABLE t; --' WHERE id = 7`,
    );
  });

  it('escapes backslashes with the E syntax', () => {
    expect(inline(sql('SELECT $1', 'a\\b'))).toBe("SELECT  E'a\\\\b'");
  });

  it('types values PostgreSQL cannot infer from a bare string', () => {
    expect(inline(sql('SELECT $1, $2, $3, $4, $5', null, true, new Date(0), { a: 1 }, Buffer.from([1, 255])))).toBe(
      `SELECT NULL, true, '1970-01-01T00:00:00.000Z'::timestamptz, '{"a":1}'::jsonb, '\\x01ff'::bytea`,
    );
  });

  it('replaces $10 as one placeholder, not $1 followed by 0', () => {
    const values = Array.from({ length: 10 }, (_, i) => i + 1);
    expect(inline(sql('SELECT $1, $10', ...values))).toBe('SELECT 1, 10');
  });
});
