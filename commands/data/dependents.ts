import type { Model, Relation } from '../../domain/data/catalog';
import { servable } from '../../domain/data/catalog';
import type { Queryable } from '../../infra/postgres/db';

type Row = Record<string, unknown>;

/** a row of a generated model that a foreign key's action changes: as it was, and as it is after (null: deleted) */
export interface Dependent {
  model: Model;
  before: Row;
  after: Row | null;
}

/** a row deleted, or the columns of it that change */
export type Change = 'deleted' | { changed: string[] };

const ACTING = new Set<Relation['onDelete']>(['cascade', 'set null', 'set default']);
const tableOf = (m: Model) => `"${m.schema}"."${m.table}"`;

/** the relations of the module's generated models whose foreign key acts when a row of `target` changes so */
const actingOn = (models: Model[], target: Model, change: Change): { source: Model; relation: Relation }[] =>
  models
    .filter(servable)
    .flatMap((source) =>
      source.relations
        .filter(
          (r) =>
            r.target === target.name &&
            (change === 'deleted'
              ? ACTING.has(r.onDelete)
              : change.changed.includes(r.targetColumn) && ACTING.has(r.onUpdate)),
        )
        .map((relation) => ({ source, relation })),
    );

/**
 * The rows (of generated models, within the tenant) that the foreign keys' actions will change when
 * the row `id` of `m` is deleted or its `changed` columns change — through every level of cascades —
 * read before the statement and locked with the row itself (FOR UPDATE), so that no reference to it
 * appears meanwhile. None when no foreign key acts (restrict and no action refuse instead: a
 * problem, database-errors.ts).
 */
export const dependentsOf = async (
  tx: Queryable,
  models: Model[],
  m: Model,
  tenantId: string,
  id: string,
  change: Change,
): Promise<Dependent[]> => {
  if (actingOn(models, m, change).length === 0) return [];
  const root = (
    await tx.query<Row>(`SELECT * FROM ${tableOf(m)} WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, [tenantId, id])
  ).rows[0];
  if (!root) return [];
  const found: Dependent[] = [];
  const seen = new Set([`${m.name}:${String(root.id)}`]);
  const visit = async (target: Model, row: Row, how: Change): Promise<void> => {
    for (const { source, relation } of actingOn(models, target, how)) {
      const { rows } = await tx.query<Row>(
        `SELECT s.* FROM ${tableOf(source)} s JOIN ${tableOf(target)} t
           ON t.tenant_id = s.tenant_id AND t."${relation.targetColumn}" = s."${relation.fk}"
         WHERE s.tenant_id = $1 AND t.id = $2 FOR UPDATE OF s`,
        [tenantId, row.id],
      );
      for (const child of rows) {
        const key = `${source.name}:${String(child.id)}`;
        if (seen.has(key)) continue;
        seen.add(key);
        found.push({ model: source, before: child, after: null });
        const action = how === 'deleted' ? relation.onDelete : relation.onUpdate;
        await visit(source, child, how === 'deleted' && action === 'cascade' ? 'deleted' : { changed: [relation.fk] });
      }
    }
  };
  await visit(m, root, change);
  return found;
};

/** the dependents as they are after the statement, in the order found: those deleted, and those whose row changed */
export const dependentsNow = async (tx: Queryable, tenantId: string, dependents: Dependent[]): Promise<Dependent[]> => {
  const now = new Map<string, Row>();
  for (const m of new Set(dependents.map((d) => d.model))) {
    const { rows } = await tx.query<Row>(`SELECT * FROM ${tableOf(m)} WHERE tenant_id = $1 AND id = ANY($2)`, [
      tenantId,
      dependents.filter((d) => d.model === m).map((d) => d.before.id),
    ]);
    for (const r of rows) now.set(`${m.name}:${String(r.id)}`, r);
  }
  return dependents
    .map((d) => ({ ...d, after: now.get(`${d.model.name}:${String(d.before.id)}`) ?? null }))
    .filter((d) => d.after === null || JSON.stringify(d.after) !== JSON.stringify(d.before));
};
