import type { ModuleRow } from '../../domain/data/access';
import { ARCHIVED_SQL, MODULE_SQL } from '../../domain/data/access';
import type { CheckRow, ColumnRow, IndexRow, Model, RelationRow } from '../../domain/data/catalog';
import { CATALOG_SQL, modelsOf } from '../../domain/data/catalog';
import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { Manifest } from '../../domain/modules/manifest';
import { schemaOfModule } from '../../domain/modules/manifest';
import type { Queryable } from '../../infra/postgres/db';

/** a module's models as its schema stands (PostgreSQL's catalog) */
export const loadModels = async (q: Queryable, slug: string, manifest: Pick<Manifest, 'models'>): Promise<Model[]> => {
  const schema = schemaOfModule(slug);
  const [columns, indexes, relations, checks] = await Promise.all([
    q.query<ColumnRow>(CATALOG_SQL.columns, [schema]),
    q.query<IndexRow>(CATALOG_SQL.indexes, [schema]),
    q.query<RelationRow>(CATALOG_SQL.relations, [schema]),
    q.query<CheckRow>(CATALOG_SQL.checks, [schema]),
  ]);
  return modelsOf(slug, manifest, {
    columns: columns.rows,
    indexes: indexes.rows,
    relations: relations.rows,
    checks: checks.rows,
  });
};

export const moduleRowOf = async (q: Queryable, slug: string, tenantId: string): Promise<ModuleRow | null> =>
  (await q.query<ModuleRow>(MODULE_SQL, [PLATFORM_TENANT_ID, slug, tenantId])).rows[0] ?? null;

interface Entry {
  key: string;
  models: Model[];
  archived: ReadonlySet<string>;
}

/**
 * The catalog of the modules this process serves, kept per module and refreshed whenever the
 * module's row says its version, manifest or schema moved (the row is read on every request: one
 * indexed query), so a migration run by another process is seen on the next request.
 */
export class ModelCatalog {
  private readonly entries = new Map<string, Entry>();

  async of(q: Queryable, row: ModuleRow): Promise<{ models: Model[]; archived: ReadonlySet<string> }> {
    const key = `${row.version}:${row.schema_version ?? 0}:${row.updated_at.toISOString()}`;
    const found = this.entries.get(row.id);
    if (found?.key === key) return found;
    const [models, archived] = await Promise.all([
      loadModels(q, row.slug, row.manifest),
      q.query<{ key: string }>(ARCHIVED_SQL, [row.id]).then((r) => new Set(r.rows.map((x) => x.key))),
    ]);
    const entry = { key, models, archived };
    this.entries.set(row.id, entry);
    return entry;
  }

  /** forgets a module (after a reconciliation changed its permissions) */
  drop(moduleId: string): void {
    this.entries.delete(moduleId);
  }
}
