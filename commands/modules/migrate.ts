import { MODULE_DATA_ROLE, TENANT_SETTING } from '../../domain/data/access';
import type { ManifestMigration } from '../../domain/modules/manifest';
import { schemaOfModule } from '../../domain/modules/manifest';
import type { Kernel } from '../../infra/kernel';
import type { Queryable, Tx } from '../../infra/postgres/db';
import { foreignKeysOutside, scopeToTenant } from './tenant-keys';

/**
 * Runs a module's numbered migrations into schema module_<slug> (spec 002, Versioning and Module
 * status). One process at a time per module (a session advisory lock: the second waits, then finds
 * the work done); each migration in its own transaction with the rules of the data layer checked
 * before it commits: every table of the schema carries tenant_id, gets row-level security by
 * tenant, and its keys are the tenant's (tenant-keys.ts: foreign keys and unique keys include
 * tenant_id; a foreign key may not leave the schema). A failure rolls that migration back, keeps the earlier ones, and marks the module dirty
 * with its error: nothing more runs until a fixed version, a retry or `force-version`.
 */

export interface SchemaState {
  module_id: string;
  slug: string;
  version: number;
  dirty: boolean;
  failed_version: number | null;
  migration_error: string | null;
  permissions_reconciled: boolean;
  updated_at: Date;
}

export interface MigrationOutcome {
  version: number;
  applied: number[];
  status: 'ok' | 'error';
  migrationError: string | null;
}

export const schemaStateOf = async (q: Queryable, moduleId: string): Promise<SchemaState | null> =>
  (await q.query<SchemaState>('SELECT * FROM modules.schema_state WHERE module_id = $1', [moduleId])).rows[0] ?? null;

const lockKey = (slug: string) => `modules.migrate:${slug}`;

/** the role exists once per server (roles are the cluster's); a database user without CREATEROLE relies on FORCE ROW LEVEL SECURITY alone */
export const ensureDataRole = async (q: Queryable): Promise<boolean> => {
  await q.query(`DO $$ BEGIN
      IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${MODULE_DATA_ROLE}') THEN CREATE ROLE ${MODULE_DATA_ROLE} NOLOGIN NOBYPASSRLS; END IF;
    EXCEPTION WHEN duplicate_object OR unique_violation OR insufficient_privilege THEN NULL; END $$`);
  const { rows } = await q.query<{ usable: boolean }>(
    `SELECT coalesce((SELECT pg_has_role(current_user, oid, 'MEMBER') FROM pg_roles WHERE rolname = $1), false) AS usable`,
    [MODULE_DATA_ROLE],
  );
  return rows[0]?.usable ?? false;
};

/** tables of the schema without a tenant_id column (a migration that leaves one is refused) */
const tablesWithoutTenant = async (tx: Tx, schema: string): Promise<string[]> =>
  (
    await tx.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = $1 AND c.relkind IN ('r', 'p')
       AND NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped)
     ORDER BY 1`,
      [schema],
    )
  ).rows.map((r) => r.name);

/** every table of the schema: RLS forced, one policy by tenant, the data role's grants */
const secureTables = async (tx: Tx, schema: string, roleUsable: boolean): Promise<void> => {
  const { rows } = await tx.query<{ name: string; policy: boolean }>(
    `SELECT c.relname AS name,
       EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid AND p.polname = 'tenant_isolation') AS policy
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind IN ('r', 'p')`,
    [schema],
  );
  for (const t of rows) {
    const table = `"${schema}"."${t.name}"`;
    await tx.query(`ALTER TABLE ${table} ENABLE ROW LEVEL SECURITY`);
    await tx.query(`ALTER TABLE ${table} FORCE ROW LEVEL SECURITY`);
    if (!t.policy) {
      await tx.query(`CREATE POLICY tenant_isolation ON ${table} USING (tenant_id::text = current_setting('${TENANT_SETTING}', true))
        WITH CHECK (tenant_id::text = current_setting('${TENANT_SETTING}', true))`);
    }
  }
  if (roleUsable) {
    await tx.query(`GRANT USAGE ON SCHEMA "${schema}" TO ${MODULE_DATA_ROLE}`);
    await tx.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "${schema}" TO ${MODULE_DATA_ROLE}`);
  }
};

const applyOne = async (
  kernel: Kernel,
  tx: Tx,
  schema: string,
  m: ManifestMigration,
  roleUsable: boolean,
): Promise<void> => {
  await tx.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  await tx.query(`SET LOCAL search_path TO "${schema}"`);
  const outsideBefore = new Set((await foreignKeysOutside(tx, schema)).map((k) => k.name));
  await tx.query(m.sql);
  const bare = await tablesWithoutTenant(tx, schema);
  if (bare.length)
    throw new Error(
      `table ${bare.map((t) => `${schema}.${t}`).join(', ')} has no tenant_id column: every table of a module carries tenant_id`,
    );
  const outside = (await foreignKeysOutside(tx, schema)).filter((k) => !outsideBefore.has(k.name));
  if (outside.length)
    throw new Error(
      `foreign key ${outside.map((k) => `${k.table}.${k.name}`).join(', ')} references a table outside ${schema}: a module's foreign keys reference its own tables`,
    );
  const scoped = await scopeToTenant(tx, schema);
  if (scoped.unvalidated.length)
    kernel.logger.warn(
      { schema, constraints: scoped.unvalidated },
      "rows reference another tenant's rows: the foreign key now checks new writes within the tenant, the rows stay",
    );
  await secureTables(tx, schema, roleUsable);
};

export interface ModuleToMigrate {
  id: string;
  slug: string;
  migrations: ManifestMigration[];
}

/** applies the migrations the module has not reached yet; answers where it stands */
export const migrateModule = async (kernel: Kernel, module: ModuleToMigrate): Promise<MigrationOutcome> => {
  const schema = schemaOfModule(module.slug);
  const client = await kernel.db.connect();
  const applied: number[] = [];
  try {
    await client.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [lockKey(module.slug)]);
    try {
      await client.query(
        `INSERT INTO modules.schema_state (module_id, slug, updated_at) VALUES ($1, $2, $3) ON CONFLICT (module_id) DO NOTHING`,
        [module.id, module.slug, kernel.clock.now()],
      );
      const state = (await schemaStateOf(client, module.id))!;
      if (state.dirty)
        return { version: state.version, applied, status: 'error', migrationError: state.migration_error };
      const roleUsable = await ensureDataRole(client);
      let version = state.version;
      for (const m of module.migrations
        .filter((x) => x.version > state.version)
        .sort((a, b) => a.version - b.version)) {
        try {
          await client.query('BEGIN');
          await applyOne(kernel, client, schema, m, roleUsable);
          await client.query(
            'UPDATE modules.schema_state SET version = $2, permissions_reconciled = false, updated_at = $3 WHERE module_id = $1',
            [module.id, m.version, kernel.clock.now()],
          );
          await client.query('COMMIT');
          version = m.version;
          applied.push(m.version);
        } catch (error) {
          await client.query('ROLLBACK').catch(() => undefined);
          const migrationError =
            `migration ${m.version} (${m.name}): ${error instanceof Error ? error.message : String(error)}`.slice(
              0,
              2000,
            );
          await client.query(
            'UPDATE modules.schema_state SET dirty = true, failed_version = $2, migration_error = $3, updated_at = $4 WHERE module_id = $1',
            [module.id, m.version, migrationError, kernel.clock.now()],
          );
          kernel.logger.warn(
            { module: module.slug, version: m.version, err: error },
            'a module migration failed; the module is in error',
          );
          return { version, applied, status: 'error', migrationError };
        }
      }
      return { version, applied, status: 'ok', migrationError: null };
    } finally {
      await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [lockKey(module.slug)]);
    }
  } finally {
    client.release();
  }
};

/** clears the dirty flag so that the next migration run tries again (an admin retry, or a fixed version) */
export const clearDirty = async (q: Queryable, moduleId: string, at: Date): Promise<void> => {
  await q.query(
    'UPDATE modules.schema_state SET dirty = false, failed_version = NULL, migration_error = NULL, updated_at = $2 WHERE module_id = $1',
    [moduleId, at],
  );
};

/** `platform modules force-version <slug> <n>`: the schema is declared at version n (repaired by hand), clean */
export const forceVersion = async (
  q: Queryable,
  moduleId: string,
  slug: string,
  version: number,
  at: Date,
): Promise<void> => {
  await q.query(
    `INSERT INTO modules.schema_state (module_id, slug, version, permissions_reconciled, updated_at) VALUES ($1, $2, $3, false, $4)
    ON CONFLICT (module_id) DO UPDATE SET version = $3, dirty = false, failed_version = NULL, migration_error = NULL, permissions_reconciled = false, updated_at = $4`,
    [moduleId, slug, version, at],
  );
};

/** the module's schema and every row in it: the platform owner's purge only */
export const dropModuleSchema = async (q: Queryable, moduleId: string, slug: string): Promise<void> => {
  await q.query(`DROP SCHEMA IF EXISTS "${schemaOfModule(slug)}" CASCADE`);
  await q.query('DELETE FROM modules.schema_state WHERE module_id = $1', [moduleId]);
  await q.query('DELETE FROM modules.permissions WHERE module_id = $1', [moduleId]);
  await q.query('DELETE FROM modules.installations WHERE module_id = $1', [moduleId]);
};

/**
 * Scopes the keys of every installed module's schema to the tenant (tenant-keys.ts), for schemas an
 * earlier version migrated with foreign and unique keys that ignore the tenant: run at start, each
 * module under its migration lock and in a transaction of its own; a schema already scoped costs
 * two catalog queries. A module it cannot scope is logged and keeps its keys (retried at the next start).
 */
export const scopeInstalledSchemas = async (kernel: Kernel): Promise<void> => {
  const { rows } = await kernel.db.query<{ slug: string }>(
    `SELECT s.slug FROM modules.schema_state s WHERE NOT s.dirty AND s.version > 0 ORDER BY s.slug`,
  );
  for (const { slug } of rows) {
    const schema = schemaOfModule(slug);
    const client = await kernel.db.connect();
    try {
      await client.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [lockKey(slug)]);
      try {
        await client.query('BEGIN');
        const scoped = await scopeToTenant(client, schema);
        await client.query('COMMIT');
        if (scoped.changed.length)
          kernel.logger.info({ module: slug, keys: scoped.changed }, "a module's keys were scoped to the tenant");
        if (scoped.unvalidated.length || scoped.outside.length)
          kernel.logger.warn(
            { module: slug, unvalidated: scoped.unvalidated, outside: scoped.outside },
            "a module's schema holds references across tenants or outside its schema: they stay as they are",
          );
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        kernel.logger.warn(
          { err, module: slug },
          "a module's keys could not be scoped to the tenant; retried at the next start",
        );
      } finally {
        await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [lockKey(slug)]);
      }
    } finally {
      client.release();
    }
  }
};
