import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createPool, type Db } from '../../infra/postgres/db';
import { migrate } from '../../infra/postgres/migrate';
import { requireEnv } from './env';
import { TEMPLATE_DATABASE_ENV } from './template-database';
import { pollUntil } from './poll';

export interface TestDatabase {
  url: string;
  db: Db;
  drop: () => Promise<void>;
}

/** A fresh, migrated database of its own for one test file, on the test PostgreSQL server. */
export const createTestDatabase = async (
  prefix = 't',
  options: { serverUrl?: string; poolSize?: number } = {},
): Promise<TestDatabase> => {
  const serverUrl = options.serverUrl ?? requireEnv('TEST_DATABASE_URL');
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  // a copy of the run's migrated template (tests/support/template-database.ts) when it has one
  const template = options.serverUrl ? undefined : process.env[TEMPLATE_DATABASE_ENV];
  await admin.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const db = createPool(url.toString(), { max: options.poolSize ?? 30 });
  await migrate(db);
  return {
    url: url.toString(),
    db,
    drop: async () => {
      await db.end();
      const c = new pg.Client({ connectionString: serverUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
};

/**
 * Waits until every event committed so far is visible to log readers: a transaction still running
 * anywhere on the server (another test file's) holds back pg_snapshot_xmin, and with it what the
 * relay and the projectors may read (DESIGN.md mechanism 1). Call it before draining them.
 */
export const waitForVisibleLog = async (db: Db, timeoutMs = 30_000): Promise<void> => {
  await pollUntil(
    async () =>
      (
        await db.query<{ settled: boolean }>(
          `SELECT coalesce((SELECT transaction_id FROM es.events ORDER BY transaction_id DESC LIMIT 1) < pg_snapshot_xmin(pg_current_snapshot()), true) AS settled`,
        )
      ).rows[0]?.settled === true,
    Boolean,
    { timeoutMs, everyMs: 20, what: 'the log settled (no transaction still running on the server)' },
  );
};
