/**
 * pgledger (bench/peers/pgledger/: its SQL, vendored at a pinned commit, see SOURCE.md there) as
 * the ledger peer of bench/money-transfers.ts: loaded into a scratch database of its own on the
 * same PostgreSQL, `accounts` accounts opened with its pgledger_create_account, then pgbench calls
 * its pgledger_create_transfer between two random distinct accounts (amount 1–100) from `clients`
 * connections — a transfer with balances, versions and entries, all in PostgreSQL functions, no
 * HTTP, no idempotency, no events: what a ledger in PostgreSQL alone reaches here.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { PgbenchResult } from './pgbench';
import { runPgbench } from './pgbench';

const DIR = join(dirname(fileURLToPath(import.meta.url)), 'pgledger');
/** in the order of pgledger's justfile (dbload): the ULID helpers, then the ledger */
const FILES = [
  'vendor/scoville-pgsql-ulid/ulid-to-uuid.sql',
  'vendor/scoville-pgsql-ulid/uuid-to-ulid.sql',
  'pgledger.sql',
];
export const PGLEDGER_COMMIT = /commit: ([0-9a-f]{40})/.exec(readFileSync(join(DIR, 'SOURCE.md'), 'utf8'))![1]!;

/**
 * pgbench's transfer: two distinct accounts by number (a lookup table maps the numbers to
 * pgledger's ULID ids — pgbench draws numbers, not text; a primary-key read each), then the
 * function as pgledger's own performance check calls it.
 */
const TRANSFER = (accounts: number) => `\\set a random(1, ${accounts})
\\set b random(1, ${accounts - 1})
\\if :b >= :a
\\set b :b + 1
\\endif
\\set amount random(1, 100)
SELECT * FROM pgledger_create_transfer((SELECT id FROM bench_accounts WHERE n = :a), (SELECT id FROM bench_accounts WHERE n = :b), :amount);
`;

export const pgledgerTransfers = async (options: {
  serverUrl: string;
  accounts: number;
  clients: number;
  seconds: number;
}): Promise<PgbenchResult & { perSecond: number; transfers: number }> => {
  const name = `bench_pgledger_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: options.serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(options.serverUrl);
  url.pathname = `/${name}`;
  const c = new pg.Client({ connectionString: url.toString() });
  await c.connect();
  try {
    await c.query('BEGIN');
    for (const f of FILES) await c.query(readFileSync(join(DIR, f), 'utf8'));
    await c.query('COMMIT');
    await c.query('CREATE TABLE bench_accounts (n int PRIMARY KEY, id text NOT NULL)');
    await c.query(
      `INSERT INTO bench_accounts SELECT g, (pgledger_create_account('account ' || g, 'USD')).id FROM generate_series(1, $1::int) g`,
      [options.accounts],
    );
    await c.query('VACUUM ANALYZE');
    const r = await runPgbench({
      url: url.toString(),
      script: TRANSFER(options.accounts),
      clients: options.clients,
      seconds: options.seconds,
    });
    // every transaction pgbench counted wrote one transfer and two entries that balance
    const { rows } = await c.query<{ transfers: number; entries: number; sum: string }>(
      'SELECT (SELECT count(*)::int FROM pgledger_transfers) AS transfers, (SELECT count(*)::int FROM pgledger_entries) AS entries, (SELECT sum(balance)::text FROM pgledger_accounts) AS sum',
    );
    const check = rows[0]!;
    if (check.transfers !== r.transactions || check.entries !== 2 * r.transactions || Number(check.sum) !== 0)
      throw new Error(`pgledger: pgbench counted ${r.transactions} transfers, the ledger has ${JSON.stringify(check)}`);
    return { ...r, perSecond: r.tps, transfers: check.transfers };
  } finally {
    await c.end();
    const d = new pg.Client({ connectionString: options.serverUrl });
    await d.connect();
    await d.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await d.end();
  }
};
