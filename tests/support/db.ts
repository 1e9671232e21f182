import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createPool, type Db } from '../../infra/postgres/db';
import { migrate } from '../../infra/postgres/migrate';
import { requireEnv } from './env';
import { pollUntil } from './poll';

/** the run's migrated template (tests/support/template-database.ts sets it): each file's database is a copy */
export const TEMPLATE_DATABASE_ENV = 'PLATFORM_TEST_TEMPLATE_DATABASE';

export interface TestDatabase {
  name: string;
  url: string;
  db: Db;
  drop: () => Promise<void>;
}

const adminQuery = async (serverUrl: string, sql: string): Promise<void> => {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
};

/**
 * A fresh, migrated database of its own for one test file, on the test PostgreSQL server: a copy
 * of the run's template when there is one (`template: null` makes one from the first migration).
 */
export const createTestDatabase = async (
  prefix = 't',
  options: { serverUrl?: string; poolSize?: number; template?: string | null } = {},
): Promise<TestDatabase> => {
  const serverUrl = options.serverUrl ?? requireEnv('TEST_DATABASE_URL');
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const template =
    options.template !== undefined ? options.template : options.serverUrl ? null : process.env[TEMPLATE_DATABASE_ENV];
  await adminQuery(serverUrl, `CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const db = createPool(url.toString(), { max: options.poolSize ?? 30 });
  await migrate(db);
  return {
    name,
    url: url.toString(),
    db,
    drop: async () => {
      if (!db.ended) await db.end(); // the template's pool is ended before the run copies it
      await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
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
