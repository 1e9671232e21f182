import { z } from 'zod';
import type { Manifest, ManifestModel } from '../modules/manifest';
import { schemaOfModule, tableOfModel } from '../modules/manifest';

/**
 * What the data layer knows of a module's tables, read from PostgreSQL's catalog (so it is what the
 * migrations really made): the statements here, the shapes they fill, and the model descriptions of
 * spec 002 ("Model description"). Both sides run the statements through their own lookups.
 */
export const CATALOG_SQL = {
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
