import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeBatch } from '../../../infra/projections/batch';
import { sql } from '../../../infra/projections/projection';
import type { TestDatabase } from '../../support/db';
import { createTestDatabase } from '../../support/db';

let t: TestDatabase;
let client: pg.PoolClient;

/** a batch in a transaction of its own, as the engine runs it */
const inTx = async (fn: () => Promise<void>) => {
  await client.query('BEGIN');
  await fn();
  await client.query('COMMIT');
};

const upsert = (table: string, id: string, value: string) =>
  sql(
    `INSERT INTO ${table} (id, value) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET value = EXCLUDED.value`,
    id,
    value,
  );

beforeAll(async () => {
  t = await createTestDatabase('pbatch');
  await t.db.query('CREATE TABLE batch_a (id text PRIMARY KEY, value text NOT NULL)');
  await t.db.query('CREATE TABLE batch_b (id text PRIMARY KEY, value text NOT NULL)');
  await t.db.query('CREATE VIEW batch_live AS SELECT * FROM batch_a');
  client = await t.db.connect();
});
afterAll(async () => {
  client.release();
  await t.drop();
});

describe('a projection batch', () => {
  it('binds its values and prepares a per-event statement once per connection', async () => {
    // given values a spliced literal would have to escape
    const values = ["it's", 'back\\slash', '$1 -- not a parameter', 'naïve ☃'];
    // when two batches of the same per-event statement run on one connection
    await inTx(() =>
      executeBatch(
        client,
        values.map((v, i) => upsert('batch_a', `a${i}`, v)),
      ),
    );
    await inTx(() =>
      executeBatch(
        client,
        values.map((v, i) => upsert('batch_a', `b${i}`, v)),
      ),
    );
    // then every value is stored as given, and the statement was prepared once on the connection
    const { rows } = await client.query<{ id: string; value: string }>('SELECT id, value FROM batch_a ORDER BY id');
    expect(rows).toEqual(
      [...values.map((v, i) => ({ id: `a${i}`, value: v })), ...values.map((v, i) => ({ id: `b${i}`, value: v }))].sort(
        (x, y) => x.id.localeCompare(y.id),
      ),
    );
    const prepared = await client.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement = $1',
      [upsert('batch_a', '', '').text],
    );
    expect(prepared.rows[0]!.n).toBe(1);
  });

  it('writes through a view repointed to another table after the statement was prepared', async () => {
    // given a prepared per-event statement on a view (a projection's live relation)
    await inTx(() => executeBatch(client, [upsert('batch_live', 'x1', 'old'), upsert('batch_live', 'x2', 'old')]));
    // when the view is repointed to a new generation's table (a rebuild's switch)
    await client.query('DROP VIEW batch_live');
    await client.query('CREATE VIEW batch_live AS SELECT * FROM batch_b');
    await inTx(() => executeBatch(client, [upsert('batch_live', 'y1', 'new'), upsert('batch_live', 'y2', 'new')]));
    // then the rows land in the new table
    const { rows } = await client.query<{ id: string }>('SELECT id FROM batch_b ORDER BY id');
    expect(rows.map((r) => r.id)).toEqual(['y1', 'y2']);
  });

  it('leaves nothing of a batch whose statement fails, and throws its error', async () => {
    // given a batch whose third statement breaks a constraint
    await client.query('BEGIN');
    const batch = [
      upsert('batch_a', 'f1', 'v'),
      upsert('batch_a', 'f2', 'v'),
      sql('INSERT INTO batch_a (id, value) VALUES ($1, NULL)', 'f3'),
      upsert('batch_a', 'f4', 'v'),
    ];
    // when it runs in a transaction
    const failed = await executeBatch(client, batch).then(
      () => null,
      (e: unknown) => e,
    );
    await client.query('ROLLBACK');
    // then the error is the statement's, and no row of the batch is there
    expect((failed as { code?: string } | null)?.code).toBe('23502');
    const { rows } = await client.query("SELECT id FROM batch_a WHERE id LIKE 'f%'");
    expect(rows).toEqual([]);
  });
});
