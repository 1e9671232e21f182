import { afterAll, describe, expect, it } from 'vitest';
import { createPool } from '../../../infra/postgres/db';
import { requireEnv } from '../../support/env';
import { watchProcessErrors } from '../../support/process-errors';

/**
 * The platform's PostgreSQL pool (infra/postgres/db.ts) when the server ends a connection a
 * transaction or a worker holds (a restart, pg_terminate_backend): the holder's queries fail, the
 * process goes on (pg emits the failure as an event too, which without a listener ends the process).
 */
const pool = createPool(requireEnv('TEST_DATABASE_URL'), { max: 3, applicationName: 'platform-pool-test' });
const watched = watchProcessErrors();
afterAll(async () => {
  await pool.end();
  watched.stop();
});

describe('a connection checked out of the pool whose backend is terminated', () => {
  it('fails its holder’s queries, reaches nothing else, and the pool goes on serving', async () => {
    const client = await pool.connect();
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
    await pool.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
    // the server's goodbye reached the idle client (pg emits it as 'error', then 'end'; without a
    // listener of the 'error' the throw cuts that short: the bound keeps the failure quick to read)
    await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 10_000))]);
    expect(watched.errors()).toEqual([]);
    const failure = await client.query('SELECT 1').then(
      () => null,
      (error: unknown) => error,
    );
    expect(String(failure)).toMatch(/terminat|Connection/i);
    client.release(failure as Error);
    expect((await pool.query<{ ok: number }>('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
    expect(watched.errors()).toEqual([]);
  });
});
