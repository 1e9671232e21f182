import type { Model } from '../../domain/data/catalog';
import { DATA_ROLE_USABLE_SQL, tenantScopeSql } from '../../domain/data/access';
import type { ListQuery } from '../../domain/data/query';
import { OPERATORS } from '../../domain/data/query';
import type { Kernel } from '../../infra/kernel';
import { inTransaction, type Tx } from '../../infra/postgres/db';

type Row = Record<string, unknown>;
const roles = new WeakMap<Kernel, Promise<boolean>>();

/** whether this process can take the data role (row-level security then binds even a superuser's connection) */
const useRole = (kernel: Kernel): Promise<boolean> => {
  let found = roles.get(kernel);
  if (!found) {
    found = kernel.db.query<{ usable: boolean }>(DATA_ROLE_USABLE_SQL).then((r) => r.rows[0]?.usable ?? false);
    roles.set(kernel, found);
  }
  return found;
};

/**
 * Reads of a module's tables, as the tenant: every statement filters by tenant_id, and runs under
 * the tenant setting and the data role, so row-level security holds even if a filter were missing.
 */
export const asTenantRead = async <T>(kernel: Kernel, tenantId: string, fn: (tx: Tx) => Promise<T>): Promise<T> => {
  const role = await useRole(kernel);
  return inTransaction(kernel.db, async (tx) => {
    await tx.query(tenantScopeSql(role), [tenantId]);
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
