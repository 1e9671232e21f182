import type { Queryable } from '../../infra/postgres/db';

/**
 * A module's keys are the tenant's (DESIGN.md mechanism 4). Row-level security does not cover keys:
 * a foreign key's check and a unique index see every tenant's rows. So a reference to another
 * tenant's row would be accepted (and pin that row: its tenant could no longer delete it), and a
 * value another tenant holds would collide — both telling one tenant what another has. The
 * registry therefore rewrites, after each migration and once at start for schemas migrated before:
 *
 * - every unique key (constraint or index, primary keys aside: ids are the server's) that does not
 *   hold tenant_id gets it as its first column — unique within the tenant;
 * - every foreign key that does not pair tenant_id with tenant_id becomes (tenant_id, col) →
 *   (tenant_id, ref), with a unique key (tenant_id, ref) on the referenced table where none exists,
 *   its name, actions (ON DELETE SET NULL / SET DEFAULT on its own columns only; ON UPDATE SET NULL /
 *   SET DEFAULT become NO ACTION) and deferral kept;
 *   rows that already reference another tenant's row stay, and the key checks new writes
 *   (NOT VALID), reported to the caller.
 *
 * A foreign key to a table outside the module's schema cannot be scoped: a migration that adds one
 * is refused (migrate.ts); one left by an earlier version is reported and kept.
 */

const q = (name: string) => `"${name.replace(/"/g, '""')}"`;

interface ForeignKeyRow {
  name: string;
  table: string;
  ref_schema: string;
  ref_table: string;
  columns: string[];
  ref_columns: string[];
  on_delete: string;
  on_update: string;
  deferrable: boolean;
  deferred: boolean;
}

const FOREIGN_KEYS_SQL = `SELECT con.conname AS name, t.relname AS table, rn.nspname AS ref_schema, rt.relname AS ref_table,
    array(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY k(attnum, n) JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum ORDER BY k.n)::text[] AS columns,
    array(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY k(attnum, n) JOIN pg_attribute a ON a.attrelid = rt.oid AND a.attnum = k.attnum ORDER BY k.n)::text[] AS ref_columns,
    con.confdeltype AS on_delete, con.confupdtype AS on_update, con.condeferrable AS deferrable, con.condeferred AS deferred
  FROM pg_constraint con JOIN pg_class t ON t.oid = con.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace
    JOIN pg_class rt ON rt.oid = con.confrelid JOIN pg_namespace rn ON rn.oid = rt.relnamespace
  WHERE n.nspname = $1 AND con.contype = 'f' ORDER BY t.relname, con.conname`;

/** unique keys of the schema's tables (primary keys aside), with their key columns and how to make them again */
const UNIQUE_KEYS_SQL = `SELECT t.relname AS table, i.relname AS index, con.conname AS constraint,
    pg_get_indexdef(ix.indexrelid) AS index_def, pg_get_constraintdef(con.oid) AS constraint_def,
    ix.indpred IS NULL AND ix.indexprs IS NULL AS plain,
    array(SELECT a.attname FROM unnest(ix.indkey) WITH ORDINALITY k(attnum, n) JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
      WHERE k.n <= ix.indnkeyatts ORDER BY k.n)::text[] AS columns
  FROM pg_index ix JOIN pg_class t ON t.oid = ix.indrelid JOIN pg_class i ON i.oid = ix.indexrelid JOIN pg_namespace n ON n.oid = t.relnamespace
    LEFT JOIN pg_constraint con ON con.conindid = ix.indexrelid AND con.conrelid = t.oid AND con.contype = 'u'
  WHERE n.nspname = $1 AND ix.indisunique AND NOT ix.indisprimary ORDER BY t.relname, i.relname`;

interface UniqueKeyRow {
  table: string;
  index: string;
  constraint: string | null;
  index_def: string;
  constraint_def: string | null;
  plain: boolean;
  columns: string[];
}

/** whether a foreign key pairs tenant_id with tenant_id (checked within the tenant) */
const scoped = (k: ForeignKeyRow): boolean =>
  k.columns.some((c, i) => c === 'tenant_id' && k.ref_columns[i] === 'tenant_id');

/** the foreign keys of the schema's tables that reference a table of another schema */
export const foreignKeysOutside = async (db: Queryable, schema: string): Promise<{ name: string; table: string }[]> =>
  (await db.query<ForeignKeyRow>(FOREIGN_KEYS_SQL, [schema])).rows
    .filter((k) => k.ref_schema !== schema)
    .map((k) => ({ name: k.name, table: k.table }));

/** adds tenant_id as the first key column of a CREATE UNIQUE INDEX or a UNIQUE (…) constraint definition */
const withTenantFirst = (definition: string, at: RegExp): string =>
  definition.replace(at, (found) => `${found}tenant_id, `);

const action = (code: string, columns: string[], onDelete: boolean): string => {
  switch (code) {
    case 'r':
      return 'RESTRICT';
    case 'c':
      return 'CASCADE';
    // tenant_id is never set to NULL or its default: PostgreSQL 15 takes a column list on ON DELETE
    // only, so an ON UPDATE SET NULL / SET DEFAULT refuses the key change instead (NO ACTION)
    case 'n':
      return onDelete ? `SET NULL (${columns.map(q).join(', ')})` : 'NO ACTION';
    case 'd':
      return onDelete ? `SET DEFAULT (${columns.map(q).join(', ')})` : 'NO ACTION';
    default:
      return 'NO ACTION';
  }
};

export interface ScopeReport {
  /** keys rewritten (table.name) */
  changed: string[];
  /** foreign keys under which rows already reference another tenant's (or no) row: they check new writes only */
  unvalidated: string[];
  /** foreign keys to tables of other schemas, left as they are */
  outside: string[];
}

/** the unique keys on `table` whose key columns are exactly `columns` (in any order), without predicate or expression */
const hasUniqueKey = async (db: Queryable, schema: string, table: string, columns: string[]): Promise<boolean> =>
  (await db.query<UniqueKeyRow>(UNIQUE_KEYS_SQL, [schema])).rows.some(
    (u) =>
      u.table === table &&
      u.plain &&
      u.columns.length === columns.length &&
      columns.every((c) => u.columns.includes(c)),
  );

/** a constraint name free in the schema: <table>_tenant_<columns>_key, cut to PostgreSQL's 63 bytes */
const freeName = async (db: Queryable, schema: string, table: string, columns: string[]): Promise<string> => {
  const base = `${table}_tenant_${columns.join('_')}`.slice(0, 54);
  for (let i = 0; ; i += 1) {
    const name = `${base}${i ? `_${i}` : ''}_key`;
    const { rows } = await db.query<{ taken: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2)
        OR EXISTS (SELECT 1 FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = $1 AND c.conname = $2) AS taken`,
      [schema, name],
    );
    if (!rows[0]?.taken) return name;
  }
};

/**
 * Rewrites the schema's keys so that each holds tenant_id (see above), in the caller's transaction.
 * Idempotent: a schema already scoped is only read.
 */
export const scopeToTenant = async (db: Queryable, schema: string): Promise<ScopeReport> => {
  const report: ScopeReport = { changed: [], unvalidated: [], outside: [] };
  const keys = (await db.query<ForeignKeyRow>(FOREIGN_KEYS_SQL, [schema])).rows.filter((k) => !scoped(k));
  report.outside = keys.filter((k) => k.ref_schema !== schema).map((k) => `${k.table}.${k.name}`);
  const foreign = keys.filter((k) => k.ref_schema === schema);
  const uniques = (await db.query<UniqueKeyRow>(UNIQUE_KEYS_SQL, [schema])).rows.filter(
    (u) => !u.columns.includes('tenant_id'),
  );
  if (!foreign.length && !uniques.length) return report;

  // the foreign keys first: a unique key they depend on cannot be dropped under them
  for (const k of foreign) await db.query(`ALTER TABLE ${q(schema)}.${q(k.table)} DROP CONSTRAINT ${q(k.name)}`);
  for (const u of uniques) {
    const table = `${q(schema)}.${q(u.table)}`;
    if (u.constraint && u.constraint_def) {
      await db.query(`ALTER TABLE ${table} DROP CONSTRAINT ${q(u.constraint)}`);
      await db.query(
        `ALTER TABLE ${table} ADD CONSTRAINT ${q(u.constraint)} ${withTenantFirst(u.constraint_def, /^UNIQUE[^(]*\(/)}`,
      );
    } else {
      await db.query(`DROP INDEX ${q(schema)}.${q(u.index)}`);
      await db.query(withTenantFirst(u.index_def, / USING [a-z0-9_]+ \(/));
    }
    report.changed.push(`${u.table}.${u.constraint ?? u.index}`);
  }
  for (const k of foreign) {
    const refKey = ['tenant_id', ...k.ref_columns];
    if (!(await hasUniqueKey(db, schema, k.ref_table, refKey))) {
      const name = await freeName(db, schema, k.ref_table, k.ref_columns);
      await db.query(
        `ALTER TABLE ${q(schema)}.${q(k.ref_table)} ADD CONSTRAINT ${q(name)} UNIQUE (${refKey.map(q).join(', ')})`,
      );
    }
    const table = `${q(schema)}.${q(k.table)}`;
    await db.query(
      `ALTER TABLE ${table} ADD CONSTRAINT ${q(k.name)} FOREIGN KEY (${['tenant_id', ...k.columns].map(q).join(', ')})
        REFERENCES ${q(schema)}.${q(k.ref_table)} (${refKey.map(q).join(', ')})
        ON DELETE ${action(k.on_delete, k.columns, true)} ON UPDATE ${action(k.on_update, k.columns, false)}
        ${k.deferrable ? `DEFERRABLE INITIALLY ${k.deferred ? 'DEFERRED' : 'IMMEDIATE'}` : ''} NOT VALID`,
    );
    await db.query('SAVEPOINT scope_foreign_key');
    try {
      await db.query(`ALTER TABLE ${table} VALIDATE CONSTRAINT ${q(k.name)}`);
      await db.query('RELEASE SAVEPOINT scope_foreign_key');
    } catch {
      await db.query('ROLLBACK TO SAVEPOINT scope_foreign_key');
      report.unvalidated.push(`${k.table}.${k.name}`);
    }
    report.changed.push(`${k.table}.${k.name}`);
  }
  return report;
};
