import { z } from 'zod';
import type { Manifest, ManifestModel } from '../modules/manifest';
import { schemaOfModule, tableOfModel } from '../modules/manifest';

/**
 * What the data layer knows of a module's tables, read from PostgreSQL's catalog (so it is what the
 * migrations really made): the rows its statements fill (projections/data/queries.ts runs them),
 * the models made of them, and the model descriptions of spec 002 ("Model description").
 */
export interface ColumnRow {
  table: string;
  name: string;
  type: string;
  udt: string;
  nullable: boolean;
  default: string | null;
  max_length: number | null;
  domain: string | null;
}
export interface IndexRow {
  table: string;
  name: string;
  primary: boolean;
  columns: string[];
}
export interface RelationRow {
  table: string;
  name: string;
  ref_table: string;
  columns: string[];
  ref_columns: string[];
  /** pg_constraint.confdeltype / confupdtype: a no action, r restrict, c cascade, n set null, d set default */
  on_delete: string;
  on_update: string;
}
export interface CheckRow {
  table: string;
  name: string;
  columns: string[];
}

export interface Column {
  name: string;
  type: string;
  udt: string;
  nullable: boolean;
  pk: boolean;
  default: string | null;
  maxLength: number | null;
  /** the domain the column's type is, if any (a domain's check or NOT NULL names it, not the column) */
  domain: string | null;
}
/** what a foreign key does to the rows that reference a row when that row is deleted or its key changes */
export type ReferentialAction = 'no action' | 'restrict' | 'cascade' | 'set null' | 'set default';
const ACTIONS: Record<string, ReferentialAction> = {
  a: 'no action',
  r: 'restrict',
  c: 'cascade',
  n: 'set null',
  d: 'set default',
};
export interface Relation {
  /** the name a list expands it by: the foreign key's column without _id */
  name: string;
  fk: string;
  references: string;
  /** the referenced model (or table) and column */
  target: string;
  targetColumn: string;
  /** the foreign key's constraint (a violation names it) and its actions */
  constraint: string;
  onDelete: ReferentialAction;
  onUpdate: ReferentialAction;
}
export interface Model {
  name: string;
  table: string;
  schema: string;
  autoApi: boolean;
  columns: Column[];
  indexes: { name: string; columns: string[] }[];
  relations: Relation[];
  /** table check constraints: the columns each reads */
  checks: { name: string; columns: string[] }[];
}

/**
 * The referencing and referenced columns of a foreign key but the tenant's: the registry scopes
 * every foreign key to the tenant (tenant_id, col) → (tenant_id, ref), which is still one relation.
 */
const withoutTenant = (r: RelationRow): { columns: string[]; refColumns: string[] } => {
  const keep = r.columns.map((c, i) => !(c === 'tenant_id' && r.ref_columns[i] === 'tenant_id'));
  return { columns: r.columns.filter((_, i) => keep[i]), refColumns: r.ref_columns.filter((_, i) => keep[i]) };
};

/** a module's models as its tables stand: a model whose table does not exist (yet) is left out */
export const modelsOf = (
  slug: string,
  manifest: Pick<Manifest, 'models'>,
  rows: { columns: ColumnRow[]; indexes: IndexRow[]; relations: RelationRow[]; checks: CheckRow[] },
): Model[] => {
  const schema = schemaOfModule(slug);
  const modelOfTable = new Map(manifest.models.map((m) => [tableOfModel(m), m.name]));
  const describe = (m: ManifestModel): Model | null => {
    const table = tableOfModel(m);
    const cols = rows.columns.filter((c) => c.table === table);
    if (cols.length === 0) return null;
    const indexes = rows.indexes.filter((i) => i.table === table);
    const pk = new Set(indexes.find((i) => i.primary)?.columns ?? []);
    return {
      name: m.name,
      table,
      schema,
      autoApi: m.autoApi,
      columns: cols.map((c) => ({
        name: c.name,
        type: c.type,
        udt: c.udt,
        nullable: c.nullable,
        pk: pk.has(c.name),
        default: c.default,
        maxLength: c.max_length,
        domain: c.domain ?? null,
      })),
      indexes: indexes.map((i) => ({ name: i.name, columns: i.columns })),
      relations: rows.relations
        .filter((r) => r.table === table)
        .map((r) => ({ row: r, ...withoutTenant(r) }))
        .filter(({ columns }) => columns.length === 1)
        .map(({ row: r, columns, refColumns }) => {
          const fk = columns[0]!;
          const target = modelOfTable.get(r.ref_table) ?? r.ref_table;
          return {
            name: fk.replace(/_id$/, ''),
            fk,
            references: `${target}.${refColumns[0] ?? 'id'}`,
            target,
            targetColumn: refColumns[0] ?? 'id',
            constraint: r.name,
            onDelete: ACTIONS[r.on_delete] ?? 'no action',
            onUpdate: ACTIONS[r.on_update] ?? 'no action',
          };
        }),
      checks: rows.checks.filter((c) => c.table === table).map((c) => ({ name: c.name, columns: c.columns })),
    };
  };
  return manifest.models.map(describe).filter((m): m is Model => m !== null);
};

/** whether the generated API can serve a model: autoApi, and a single-column primary key named id beside tenant_id */
export const servable = (m: Model): boolean =>
  m.autoApi &&
  m.columns.some((c) => c.name === 'id' && c.pk) &&
  m.columns.filter((c) => c.pk).every((c) => c.name === 'id' || c.name === 'tenant_id');

/** spec 002, Model description */
export const ModelListItem = z.object({
  name: z.string(),
  table: z.string(),
  autoApi: z.boolean(),
  columns: z.number().int(),
  relations: z.array(z.string()),
});
export const ModelDetail = z.object({
  name: z.string(),
  table: z.string(),
  autoApi: z.boolean(),
  columns: z.array(
    z.object({
      name: z.string(),
      type: z.string(),
      nullable: z.boolean(),
      pk: z.boolean().optional(),
      default: z.string().optional(),
    }),
  ),
  indexes: z.array(z.object({ name: z.string(), columns: z.array(z.string()) })),
  relations: z.array(z.object({ name: z.string(), fk: z.string(), references: z.string() })),
});

export const modelListItem = (m: Model): z.infer<typeof ModelListItem> => ({
  name: m.name,
  table: `${m.schema}.${m.table}`,
  autoApi: m.autoApi,
  columns: m.columns.length,
  relations: m.relations.map((r) => r.name),
});

export const modelDetail = (m: Model): z.infer<typeof ModelDetail> => ({
  name: m.name,
  table: `${m.schema}.${m.table}`,
  autoApi: m.autoApi,
  columns: m.columns.map((c) => ({
    name: c.name,
    type: c.type,
    nullable: c.nullable,
    ...(c.pk ? { pk: true } : {}),
    ...(c.default !== null ? { default: c.default } : {}),
  })),
  indexes: m.indexes,
  relations: m.relations.map((r) => ({ name: r.name, fk: r.fk, references: r.references })),
});
