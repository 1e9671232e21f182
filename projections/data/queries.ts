import type { ModuleRow } from '../../domain/data/access';
import { MODULE_DATA_ROLE, TENANT_SETTING } from '../../domain/data/access';
import type { CheckRow, ColumnRow, IndexRow, Model, RelationRow } from '../../domain/data/catalog';
import { modelsOf } from '../../domain/data/catalog';
import type { ListQuery } from '../../domain/data/query';
import { OPERATORS } from '../../domain/data/query';
import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import { moduleEventTypes } from '../../domain/modules/events';
import type { Manifest } from '../../domain/modules/manifest';
import { schemaOfModule } from '../../domain/modules/manifest';
import { CacheEpochs, EpochMemo } from '../../infra/cache/epochs';
import type { Kernel } from '../../infra/kernel';
import type { Queryable } from '../../infra/postgres/db';
import { inTransaction, type Tx } from '../../infra/postgres/db';

/**
 * The data layer's reads, for the read API and for the data commands (commands/data/context.ts
 * passes on what they use): the module catalog as PostgreSQL's catalog has it, the per-process
 * cache of it, the tenant scope every statement on a module's table runs under, and the reads of
 * records.
 */
type Row = Record<string, unknown>;

/** PostgreSQL's catalog of a module's schema ($1): columns, indexes, foreign keys, checks */
const CATALOG_SQL = {
  columns: `SELECT c.table_name AS table, c.column_name AS name, c.data_type AS type, c.udt_name AS udt, c.is_nullable = 'YES' AS nullable,
      c.column_default AS "default", c.character_maximum_length AS max_length, c.domain_name AS domain
    FROM information_schema.columns c WHERE c.table_schema = $1 ORDER BY c.table_name, c.ordinal_position`,
  indexes: `SELECT t.relname AS table, i.relname AS name, ix.indisprimary AS primary,
      array(SELECT a.attname FROM unnest(ix.indkey) WITH ORDINALITY k(attnum, n) JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum ORDER BY k.n)::text[] AS columns
    FROM pg_index ix JOIN pg_class t ON t.oid = ix.indrelid JOIN pg_class i ON i.oid = ix.indexrelid JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE n.nspname = $1 ORDER BY t.relname, i.relname`,
  relations: `SELECT t.relname AS table, con.conname AS name, rt.relname AS ref_table,
      array(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY k(attnum, n) JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum ORDER BY k.n)::text[] AS columns,
      array(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY k(attnum, n) JOIN pg_attribute a ON a.attrelid = rt.oid AND a.attnum = k.attnum ORDER BY k.n)::text[] AS ref_columns,
      con.confdeltype AS on_delete, con.confupdtype AS on_update
    FROM pg_constraint con JOIN pg_class t ON t.oid = con.conrelid JOIN pg_class rt ON rt.oid = con.confrelid JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE n.nspname = $1 AND con.contype = 'f' ORDER BY t.relname, con.conname`,
  /** table check constraints and the columns they read (a violation names them) */
  checks: `SELECT t.relname AS table, con.conname AS name,
      array(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY k(attnum, n) JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum ORDER BY k.n)::text[] AS columns
    FROM pg_constraint con JOIN pg_class t ON t.oid = con.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE n.nspname = $1 AND con.contype = 'c' ORDER BY t.relname, con.conname`,
} as const;

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

/** what a data request needs to know of its module, in one row: the registry's, its schema's state, the tenant's installation */
export const moduleRowOf = async (q: Queryable, slug: string, tenantId: string): Promise<ModuleRow | null> =>
  (
    await q.query<ModuleRow>(
      `SELECT m.id, m.slug, m.status, m.version, m.manifest, m.updated_at, s.version AS schema_version, s.dirty, s.migration_error,
    i.status AS installation
  FROM rm.modules m LEFT JOIN modules.schema_state s ON s.module_id = m.id
  LEFT JOIN modules.installations i ON i.module_id = m.id AND i.tenant_id = $3
  WHERE m.tenant_id = $1 AND m.slug = $2`,
      [PLATFORM_TENANT_ID, slug, tenantId],
    )
  ).rows[0] ?? null;

/** the one scope of the registry's epoch: a change of any module's row, schema state or installation moves it */
const REGISTRY_SCOPE = 'registry';
/**
 * The module rows (moduleRowOf) of this process's data requests and of the gateway's module check,
 * kept per (module, tenant) so that a request reads none of them from PostgreSQL, and the registry's
 * records other contexts ask for by id (the bus's publishes: `record`). Every change of what they
 * hold — the registry's events, an installation, a migration's schema state — moves the registry's
 * epoch after its commit (moduleRegistryChanged), so the next request in every process that shares
 * the cache reads them again; the registry's events delivered through the log do the same in a
 * process that shares none, and the age limit is the safety net (docs/kernel.md).
 */
export class ModuleRows {
  private readonly memo: EpochMemo<unknown>;

  constructor(
    private readonly db: Queryable,
    epochs: CacheEpochs,
  ) {
    this.memo = new EpochMemo(epochs, REGISTRY_SCOPE);
  }

  /** an unknown slug is not kept: a registration needs no epoch to be seen */
  of(slug: string, tenantId: string): Promise<ModuleRow | null> {
    return this.memo.get(
      `row\u0000${slug}\u0000${tenantId}`,
      () => moduleRowOf(this.db, slug, tenantId),
      (row) => row !== null,
    ) as Promise<ModuleRow | null>;
  }

  /** a registry record read by `load` (by id), kept like the rows; none is kept for an unknown id */
  record<T>(id: string, load: () => Promise<T | null>): Promise<T | null> {
    return this.memo.get(`record\u0000${id}`, load, (found) => found !== null) as Promise<T | null>;
  }

  /** forgets every row kept here and moves the shared epoch, so that every process reads its rows again */
  changed(): Promise<void> {
    return this.memo.changed();
  }
}

const registryEpochs = new WeakMap<Kernel, CacheEpochs>();
const registryEpochsOf = (kernel: Kernel): CacheEpochs => {
  let found = registryEpochs.get(kernel);
  if (!found) {
    found = new CacheEpochs(kernel.engines.cache, 'modules');
    registryEpochs.set(kernel, found);
  }
  return found;
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
      q
        .query<{ key: string }>(`SELECT key FROM modules.permissions WHERE module_id = $1 AND status = 'archived'`, [
          row.id,
        ])
        .then((r) => new Set(r.rows.map((x) => x.key))),
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

/** the data layer's per-process state, one for the write and the read side: the model catalog, and whether the data role can be taken here */
export interface DataContext {
  catalog: ModelCatalog;
  /** the module rows of the requests, cached (ModuleRows) */
  modules: ModuleRows;
  useRole(): Promise<boolean>;
}

const contexts = new WeakMap<Kernel, DataContext>();

export const dataContext = (kernel: Kernel): DataContext => {
  let found = contexts.get(kernel);
  if (!found) {
    let role: Promise<boolean> | null = null;
    const modules = new ModuleRows(kernel.db, registryEpochsOf(kernel));
    // a registry change made by a process that shares no cache with this one (a CLI, roles without Redis) reaches it through the log
    kernel.invalidations.on(moduleEventTypes, () => modules.changed());
    found = {
      catalog: new ModelCatalog(),
      modules,
      // whether this connection's user may take the data role (a server without it runs the queries as itself, still filtered by tenant)
      useRole: () =>
        (role ??= kernel.db
          .query<{ usable: boolean }>(
            `SELECT coalesce((SELECT pg_has_role(current_user, oid, 'MEMBER') FROM pg_roles WHERE rolname = '${MODULE_DATA_ROLE}'), false) AS usable`,
          )
          .then((r) => r.rows[0]?.usable ?? false)
          .catch(() => {
            role = null;
            return false;
          })),
    };
    contexts.set(kernel, found);
  }
  return found;
};

/** the module row of a data request (moduleRowOf), from this process's cache while the registry's epoch stands */
export const cachedModuleRowOf = (kernel: Kernel, slug: string, tenantId: string): Promise<ModuleRow | null> =>
  dataContext(kernel).modules.of(slug, tenantId);

/**
 * Call after the commit of any change of a module's row (registry events, installations, schema
 * state): every process reads its module rows again on its next request.
 */
export const moduleRegistryChanged = async (kernel: Kernel): Promise<void> => {
  // a process that serves no data request (a CLI) has no rows to forget, and subscribes to nothing for it
  const context = contexts.get(kernel);
  if (context) await context.modules.changed();
  else
    await registryEpochsOf(kernel)
      .bump([REGISTRY_SCOPE])
      .catch(() => undefined);
};

/** the module's models and archived permissions, refreshed when its version, manifest or schema moved */
export const catalogOf = (
  kernel: Kernel,
  row: ModuleRow,
): Promise<{ models: Model[]; archived: ReadonlySet<string> }> => dataContext(kernel).catalog.of(kernel.db, row);

/**
 * Scopes the transaction to the tenant in one round trip: the setting the row-level security
 * policies compare tenant_id with, and the data role when it can be taken (set_config('role', …,
 * true) is SET LOCAL ROLE).
 */
export const scopeToTenant = async (tx: Queryable, tenantId: string, useRole: boolean): Promise<void> => {
  const s = tenantScopeStatement(tenantId, useRole);
  await tx.query(s.text, s.values);
};

/** scopeToTenant's statement, for a caller that sends it with others (a batch of creates) */
export const tenantScopeStatement = (tenantId: string, useRole: boolean): { text: string; values: unknown[] } => ({
  text: useRole
    ? `SELECT set_config('${TENANT_SETTING}', $1, true), set_config('role', '${MODULE_DATA_ROLE}', true)`
    : `SELECT set_config('${TENANT_SETTING}', $1, true)`,
  values: [tenantId],
});

/**
 * Reads of a module's tables, as the tenant: every statement filters by tenant_id, and runs under
 * the tenant setting and the data role, so row-level security holds even if a filter were missing.
 */
export const asTenantRead = async <T>(kernel: Kernel, tenantId: string, fn: (tx: Tx) => Promise<T>): Promise<T> => {
  const role = await dataContext(kernel).useRole();
  return inTransaction(kernel.db, async (tx) => {
    await scopeToTenant(tx, tenantId, role);
    return fn(tx);
  });
};

const tableOf = (m: Model) => `"${m.schema}"."${m.table}"`;
const castOf = (m: Model, column: string) => m.columns.find((c) => c.name === column)!.type;

export const findRecord = async (tx: Tx, m: Model, tenantId: string, id: string): Promise<Row | null> =>
  (await tx.query<Row>(`SELECT * FROM ${tableOf(m)} WHERE tenant_id = $1 AND id::text = $2`, [tenantId, id])).rows[0] ??
  null;

/** a keyset page: filters as bound parameters, ordered by (sort, id) */
export const listRecords = async (
  tx: Tx,
  m: Model,
  tenantId: string,
  q: ListQuery,
  after: { v: string | null; id: string } | null,
  limit: number,
): Promise<Row[]> => {
  const values: unknown[] = [tenantId];
  const where = ['tenant_id = $1'];
  for (const f of q.filters) {
    const col = `"${f.column.name}"`;
    if (f.op === 'is_null') where.push(f.value === 'true' ? `${col} IS NULL` : `${col} IS NOT NULL`);
    else if (f.op === 'like') {
      values.push(f.value);
      where.push(`${col}::text LIKE $${values.length}`);
    } else {
      values.push(f.value);
      where.push(`${col} ${OPERATORS[f.op]} $${values.length}::${castOf(m, f.column.name)}`);
    }
  }
  const sort = `"${q.sort.column.name}"`;
  // PostgreSQL's own order, spelled out: NULLs last ascending, first descending (one the reverse of the other)
  const order = q.sort.desc ? 'DESC NULLS FIRST' : 'ASC NULLS LAST';
  if (after) where.push(afterCursor(m, q, sort, after, values));
  values.push(limit);
  return (
    await tx.query<Row>(
      `SELECT * FROM ${tableOf(m)} WHERE ${where.join(' AND ')} ORDER BY ${sort} ${order}, id ${q.sort.desc ? 'DESC' : 'ASC'} LIMIT $${values.length}`,
      values,
    )
  ).rows;
};

/**
 * The rows after a page's last (sort value, id) in the list's order. A row comparison with a NULL
 * sort value is NULL, so the rows whose value is NULL are placed by hand: ascending they come after
 * every value; descending, before every value.
 */
const afterCursor = (
  m: Model,
  q: ListQuery,
  sort: string,
  after: { v: string | null; id: string },
  values: unknown[],
): string => {
  values.push(after.id);
  const id = `$${values.length}::${castOf(m, 'id')}`;
  if (after.v === null)
    return q.sort.desc
      ? `((${sort} IS NULL AND id < ${id}) OR ${sort} IS NOT NULL)`
      : `(${sort} IS NULL AND id > ${id})`;
  values.push(after.v);
  const v = `$${values.length}::${castOf(m, q.sort.column.name)}`;
  if (q.sort.desc) return `(${sort}, id) < (${v}, ${id})`;
  return q.sort.column.nullable
    ? `((${sort}, id) > (${v}, ${id}) OR ${sort} IS NULL)`
    : `(${sort}, id) > (${v}, ${id})`;
};

/** the rows of a model whose `column` is one of `values`, by that column's value as text */
const rowsByColumn = async (
  tx: Tx,
  m: Model,
  tenantId: string,
  column: string,
  values: string[],
): Promise<Map<string, Row>> => {
  if (!values.length) return new Map();
  const { rows } = await tx.query<Row>(
    `SELECT * FROM ${tableOf(m)} WHERE tenant_id = $1 AND "${column}" = ANY($2::${castOf(m, column)}[])`,
    [tenantId, values],
  );
  return new Map(rows.map((row) => [String(row[column]), row]));
};

/**
 * Expands relations (depth ≤ 2, checked by the query's parser): each row gets the row its foreign
 * key references (by the referenced column) under the relation's name, null when there is none.
 * One query per relation and level, whatever the number of rows.
 */
export const expandRelations = async (
  tx: Tx,
  models: Model[],
  m: Model,
  tenantId: string,
  rows: Row[],
  paths: string[][],
): Promise<void> => {
  for (const path of paths) {
    const [head, ...rest] = path;
    const relation = m.relations.find((r) => r.name === head);
    const target = relation && models.find((x) => x.name === relation.target);
    if (!relation || !target) continue;
    const refOf = (row: Row): string | null => {
      const ref = row[relation.fk];
      return typeof ref === 'string' || typeof ref === 'number' ? String(ref) : null;
    };
    const refs = [...new Set(rows.map(refOf).filter((ref): ref is string => ref !== null))];
    const related = await rowsByColumn(tx, target, tenantId, relation.targetColumn, refs);
    if (rest.length) await expandRelations(tx, models, target, tenantId, [...related.values()], [rest]);
    for (const row of related.values()) delete row.tenant_id;
    for (const row of rows) {
      const ref = refOf(row);
      row[relation.name] = ref === null ? null : (related.get(ref) ?? null);
    }
  }
};

/** usage for billing (spec 002, Limits): the tenant's active modules and the records of their generated models */
export const usageOf = async (
  kernel: Kernel,
  tenantId: string,
  modules: { slug: string; models: Model[] }[],
): Promise<{ slug: string; records: number }[]> =>
  asTenantRead(kernel, tenantId, async (tx) => {
    const out: { slug: string; records: number }[] = [];
    for (const m of modules) {
      let records = 0;
      for (const model of m.models)
        records +=
          (
            await tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${tableOf(model)} WHERE tenant_id = $1`, [
              tenantId,
            ])
          ).rows[0]?.n ?? 0;
      out.push({ slug: m.slug, records });
    }
    return out;
  });
