import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from '../postgres/db';
import type { AnalyticsStore } from './port';
import { tableOf } from './port';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations', import.meta.url));
// PostgreSQL takes the turns: every process that migrates ClickHouse shares the platform's database.
const ANALYTICS_MIGRATION_LOCK = 7_303_020;

export interface AnalyticsMigration {
  version: string;
  name: string;
  statements: string[];
  checksum: string;
}

/**
 * ClickHouse schema migrations: infra/clickhouse/migrations/NNNN_<context>_<what>.sql, applied in
 * name order (same ranges as PostgreSQL's: audit 0500-0599). `{db}` stands for the platform's
 * database. ClickHouse has no transactional DDL, so a file is split into statements at lines ending
 * in `;` and every statement must be idempotent (IF NOT EXISTS, IF EXISTS): a process that stops
 * half-way through a file runs it again from the start next time.
 */
export const loadAnalyticsMigrations = async (dir = MIGRATIONS_DIR): Promise<AnalyticsMigration[]> => {
  const files = (await readdir(dir).catch(() => [] as string[])).filter((f) => /^\d{4}_.+\.sql$/.test(f)).sort();
  return Promise.all(
    files.map(async (file) => {
      const text = await readFile(join(dir, file), 'utf8');
      const statements = text
        .split(/;\s*$/m)
        .map((s) => s.replace(/^\s*--.*$/gm, '').trim())
        .filter(Boolean);
      return {
        version: file.slice(0, 4),
        name: file,
        statements,
        checksum: createHash('sha256').update(text).digest('hex'),
      };
    }),
  );
};

/** Applies the ClickHouse migrations not yet applied; returns how many it applied. */
export const migrateAnalytics = async (
  store: AnalyticsStore,
  db: Db,
  options: { dir?: string } = {},
): Promise<number> => {
  const migrations = await loadAnalyticsMigrations(options.dir);
  if (migrations.length === 0) return 0;
  const registry = tableOf(store, 'schema_migrations');
  const lock = await db.connect();
  try {
    await lock.query('SELECT pg_advisory_lock($1)', [ANALYTICS_MIGRATION_LOCK]);
    await store.command(`CREATE TABLE IF NOT EXISTS ${registry} (version String, name String, checksum String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3))
      ENGINE = MergeTree ORDER BY version`);
    const applied = new Map(
      (
        await store.query<{ version: string; name: string; checksum: string }>(
          `SELECT version, name, checksum FROM ${registry}`,
        )
      ).map((r) => [r.version, r]),
    );
    for (const m of migrations) {
      const done = applied.get(m.version);
      if (done && done.checksum !== m.checksum)
        throw new Error(
          `ClickHouse migration ${m.name} was changed after it was applied (applied as ${done.name}); add a new migration instead`,
        );
    }
    let count = 0;
    for (const m of migrations.filter((x) => !applied.has(x.version))) {
      for (const statement of m.statements) await store.command(statement.replaceAll('{db}', store.database));
      await store.insert(registry, [{ version: m.version, name: m.name, checksum: m.checksum }]);
      count += 1;
    }
    return count;
  } finally {
    await lock.query('SELECT pg_advisory_unlock($1)', [ANALYTICS_MIGRATION_LOCK]).catch(() => undefined);
    lock.release();
  }
};
