import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../../infra/postgres/db';
import { pipelined, statement } from '../../../infra/postgres/pipeline';
import { requireEnv } from '../../support/env';

/**
 * Statements pipelined with bound values (infra/postgres/pipeline.ts): one round trip, their results
 * in order; in a transaction block, a failure aborts the rest, a COMMIT among them included.
 */
const pool = createPool(requireEnv('TEST_DATABASE_URL'), { max: 2, applicationName: 'platform-pipeline-test' });
const table = `pipeline_test_${process.pid}`;
beforeAll(() => pool.query(`CREATE TABLE IF NOT EXISTS public.${table} (v text)`));
afterAll(async () => {
  await pool.query(`DROP TABLE IF EXISTS public.${table}`);
  await pool.end();
});

describe('statements pipelined with bound values', () => {
  it('given values a simple query would have to splice, when pipelined, then each statement reads back its own, in order', async () => {
    const client = await pool.connect();
    try {
      const values = ['$1', "it's", 'C:\\x41\\', '水🙂', 'y'.repeat(1_048_576)];
      const results = await pipelined(
        client,
        values.map((v) => ({ text: 'SELECT $1::text AS v', values: [v] })),
      );
      expect(results.map((r) => r.rows[0].v)).toEqual(values);
    } finally {
      client.release();
    }
  });

  it('given a failing statement inside a transaction block, when pipelined, then its error is thrown, nothing after it took effect, and the client goes on in its ordinary mode', async () => {
    const client = await pool.connect();
    try {
      const failure = await pipelined(client, [
        statement('BEGIN'),
        { text: `INSERT INTO public.${table} VALUES ($1)`, values: ['before'] },
        { text: 'SELECT 1 / $1::int', values: [0] },
        { text: `INSERT INTO public.${table} VALUES ($1)`, values: ['after'] },
        statement('COMMIT'),
      ]).then(
        () => null,
        (error: unknown) => error,
      );
      expect(failure).toMatchObject({ code: '22012' });
      expect((client as unknown as { pipeline: boolean }).pipeline).toBe(false);
      expect((await client.query(`SELECT count(*)::int AS n FROM public.${table}`)).rows[0].n).toBe(0);
    } finally {
      client.release();
    }
  });
});
