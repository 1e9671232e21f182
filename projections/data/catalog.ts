import type { ModuleRow } from '../../domain/data/access';
import { ARCHIVED_SQL, MODULE_SQL } from '../../domain/data/access';
import type { CheckRow, ColumnRow, IndexRow, Model, RelationRow } from '../../domain/data/catalog';
import { CATALOG_SQL, modelsOf } from '../../domain/data/catalog';
import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import { schemaOfModule } from '../../domain/modules/manifest';
import type { Kernel } from '../../infra/kernel';
import type { Queryable } from '../../infra/postgres/db';

/** the read side's view of the module catalog (the statements are the domain's: commands/data/catalog.ts runs the same) */
export const moduleRowOf = async (q: Queryable, slug: string, tenantId: string): Promise<ModuleRow | null> =>
  (await q.query<ModuleRow>(MODULE_SQL, [PLATFORM_TENANT_ID, slug, tenantId])).rows[0] ?? null;

interface Entry {
  key: string;
  models: Model[];
  archived: ReadonlySet<string>;
}
const caches = new WeakMap<Kernel, Map<string, Entry>>();

/** the module's models and archived permissions, refreshed when its version, manifest or schema moved */
export const catalogOf = async (
  kernel: Kernel,
  row: ModuleRow,
): Promise<{ models: Model[]; archived: ReadonlySet<string> }> => {
  const cache = caches.get(kernel) ?? new Map<string, Entry>();
  caches.set(kernel, cache);
  const key = `${row.version}:${row.schema_version ?? 0}:${row.updated_at.toISOString()}`;
  const found = cache.get(row.id);
  if (found?.key === key) return found;
  const schema = schemaOfModule(row.slug);
  const [columns, indexes, relations, checks, archived] = await Promise.all([
    kernel.db.query<ColumnRow>(CATALOG_SQL.columns, [schema]),
    kernel.db.query<IndexRow>(CATALOG_SQL.indexes, [schema]),
    kernel.db.query<RelationRow>(CATALOG_SQL.relations, [schema]),
    kernel.db.query<CheckRow>(CATALOG_SQL.checks, [schema]),
    kernel.db.query<{ key: string }>(ARCHIVED_SQL, [row.id]),
  ]);
  const entry = {
    key,
    models: modelsOf(row.slug, row.manifest, {
      columns: columns.rows,
      indexes: indexes.rows,
      relations: relations.rows,
      checks: checks.rows,
    }),
    archived: new Set(archived.rows.map((r) => r.key)),
  };
  cache.set(row.id, entry);
  return entry;
};

/** the slugs of the modules active for a tenant */
export const activeModulesOf = async (q: Queryable, tenantId: string): Promise<string[]> =>
  (
    await q.query<{ slug: string }>(
      `SELECT m.slug FROM modules.installations i JOIN rm.modules m ON m.tenant_id = $1 AND m.id = i.module_id
     WHERE i.tenant_id = $2 AND i.status = 'active' AND m.status = 'registered' ORDER BY m.slug`,
      [PLATFORM_TENANT_ID, tenantId],
    )
  ).rows.map((r) => r.slug);
