import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from './db';
import { inTransaction } from './db';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations', import.meta.url));
// Any constant works; it only has to be the same in every process that migrates this database.
const MIGRATION_LOCK = 7_303_019;

export interface MigrationFile {
  version: string;
  name: string;
  sql: string;
  checksum: string;
}

export const loadMigrations = async (dir = MIGRATIONS_DIR): Promise<MigrationFile[]> => {
  const files = (await readdir(dir)).filter((f) => /^\d{4}_.+\.sql$/.test(f)).sort();
  return Promise.all(
    files.map(async (file) => {
      const sql = await readFile(join(dir, file), 'utf8');
      return { version: file.slice(0, 4), name: file, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    }),
  );
};

export type MigrationProgress = (event: { applied: number; total: number; migration: string }) => void;

/**
 * Applies the migrations not yet applied, each in its own transaction, in file-name order.
 * Several processes may start at once: an advisory lock makes them take turns, and the later
 * ones find nothing left to do. A changed file that was already applied is refused, because
 * the databases that ran the old text would silently differ from the new ones.
 */
export const migrate = async (
  db: Db,
  options: { onProgress?: MigrationProgress; dir?: string } = {},
): Promise<number> => {
  const migrations = await loadMigrations(options.dir);
  const lockClient = await db.connect();
  try {
    await lockClient.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await lockClient.query(`CREATE TABLE IF NOT EXISTS public.schema_migrations (
      version text PRIMARY KEY, name text NOT NULL, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const { rows } = await lockClient.query<{ version: string; name: string; checksum: string }>(
      'SELECT version, name, checksum FROM public.schema_migrations',
    );
    const applied = new Map(rows.map((r) => [r.version, r]));
    for (const m of migrations) {
      const done = applied.get(m.version);
      if (done && done.checksum !== m.checksum) {
        throw new Error(
          `migration ${m.name} was changed after it was applied (applied as ${done.name}); add a new migration instead`,
        );
      }
    }
    const pending = migrations.filter((m) => !applied.has(m.version));
    let count = 0;
    for (const m of pending) {
      await inTransaction(db, async (tx) => {
        await tx.query(m.sql);
        await tx.query('INSERT INTO public.schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [
          m.version,
          m.name,
          m.checksum,
        ]);
      });
      count += 1;
      options.onProgress?.({ applied: count, total: pending.length, migration: m.name });
    }
    return count;
  } finally {
    await lockClient.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    lockClient.release();
  }
};
