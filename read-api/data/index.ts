import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { JsonObject } from '../../domain/shared/json';
import { gateCaller, gateIntrospection, gateModel, gateModule } from '../../domain/data/access';
import type { Principal } from '../../infra/http/auth';
import type { Model } from '../../domain/data/catalog';
import { ModelDetail, ModelListItem, modelDetail, modelListItem, servable } from '../../domain/data/catalog';
import { databaseErrorFields, readProblem } from '../../domain/data/database-errors';
import { dataErrors } from '../../domain/data/errors';
import { parseListQuery, valueProblem } from '../../domain/data/query';
import { decodeCursor, pageQuery, toPage } from '../../infra/http/pagination';
import { defineRoutes } from '../../infra/services';
import {
  activeModulesOf,
  asTenantRead,
  cachedModuleRowOf,
  catalogOf,
  expandRelations,
  findRecord,
  listRecords,
  moduleRowOf,
  usageOf,
} from '../../projections/data/queries';
import { callerOf } from '../../infra/http/auth';

const Slug = z
  .string()
  .regex(/^[a-z][a-z0-9_]{1,31}$/)
  .describe("the module's slug");
const Name = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,62}$/)
  .describe("the model's name");
const Record = JsonObject;
/** the last row of a page: its sort value (null when the column is NULL there) and id */
const Cursor = z.object({ v: z.string().max(2048).nullable(), id: z.string().max(256) });

type Row = Record<string, unknown>;
const view = (row: Row): Row => {
  const { tenant_id: _tenant, ...rest } = row;
  return JSON.parse(JSON.stringify(rest)) as Row;
};
const textOf = (v: unknown): string => (v instanceof Date ? v.toISOString() : String(v));

/** every relation of an expand path exists (else 400): name, then name.name on the related model */
const checkExpand = (models: Model[], m: Model, paths: string[][]): void => {
  for (const path of paths) {
    let at: Model | undefined = m;
    for (const name of path) {
      const relation: Model['relations'][number] | undefined = at?.relations.find((r) => r.name === name);
      at = relation && models.find((x) => x.name === relation.target);
      if (!at)
        throw dataErrors.invalidQuery([
          { field: 'expand', message: `${path.join('.')} is not a relation of the model`, code: 'UNKNOWN_RELATION' },
        ]);
    }
  }
};

/**
 * The data layer's reads (spec 002, Data model): introspection of a module's models, and the
 * generated list and get of every autoApi model, for the tenant of the token only.
 */
export default defineRoutes({
  namespace: 'data',
  register(app, kernel) {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const resolve = async (caller: Principal, slug: string) => {
      gateCaller(caller, slug);
      const row = gateModule(await cachedModuleRowOf(kernel, slug, caller.tenantId));
      return { row, ...(await catalogOf(kernel, row)) };
    };

    r.get(
      '/data/usage',
      {
        config: { access: 'bearer' },
        schema: {
          summary: "The tenant's data usage, for billing: active modules and the records of their generated models",
          response: {
            200: z.object({
              modules: z.number().int(),
              records: z.number().int(),
              byModule: z.array(z.object({ slug: z.string(), records: z.number().int() })),
            }),
          },
        },
      },
      async (request) => {
        const { tenantId, source } = callerOf(request);
        const modules = [];
        for (const slug of await activeModulesOf(kernel.db, tenantId)) {
          // a module's key sees its own module only (the others are not there for it)
          if (source !== undefined && slug !== source) continue;
          const row = await moduleRowOf(kernel.db, slug, tenantId);
          if (row && !row.dirty) modules.push({ slug, models: (await catalogOf(kernel, row)).models.filter(servable) });
        }
        const byModule = await usageOf(kernel, tenantId, modules);
        return { modules: byModule.length, records: byModule.reduce((n, m) => n + m.records, 0), byModule };
      },
    );

    r.get(
      '/data/:module/models',
      {
        config: { access: 'bearer' },
        schema: {
          summary: "The module's models (any read permission of the module)",
          params: z.object({ module: Slug }),
          response: { 200: z.object({ data: z.array(ModelListItem) }) },
        },
      },
      async (request) => {
        const p = callerOf(request);
        const { models, archived } = await resolve(p, request.params.module);
        gateIntrospection(models, request.params.module, p.permissions, archived);
        return { data: models.map(modelListItem) };
      },
    );

    r.get(
      '/data/:module/models/:model',
      {
        config: { access: 'bearer' },
        schema: {
          summary: 'A model: columns, indexes, relations',
          params: z.object({ module: Slug, model: Name }),
          response: { 200: ModelDetail },
        },
      },
      async (request) => {
        const p = callerOf(request);
        const { models, archived } = await resolve(p, request.params.module);
        gateIntrospection(models, request.params.module, p.permissions, archived);
        const m = models.find((x) => x.name === request.params.model);
        if (!m) throw dataErrors.modelNotFound();
        return modelDetail(m);
      },
    );

    r.get(
      '/data/:module/:model',
      {
        config: { access: 'bearer', problems: [422] },
        schema: {
          summary: 'Records of a generated model: filters <field>=v or <field>[op]=v, sort, expand, pages',
          params: z.object({ module: Slug, model: Name }),
          querystring: z.looseObject({
            ...pageQuery,
            sort: z.string().max(64).optional(),
            expand: z.string().max(256).optional(),
          }),
          response: { 200: z.object({ data: z.array(Record), next_page_token: z.string().optional() }) },
        },
      },
      async (request) => {
        const p = callerOf(request);
        const { module, model } = request.params;
        const { models, archived } = await resolve(p, module);
        const m = gateModel(models, module, model, 'read', p.permissions, archived);
        const q = request.query;
        const list = parseListQuery(m, q);
        checkExpand(models, m, list.expand);
        const after = decodeCursor(q.page_token, Cursor);
        const idColumn = m.columns.find((c) => c.name === 'id')!;
        if (
          after &&
          ((after.v !== null && valueProblem(list.sort.column, after.v)) ||
            (after.v === null && !list.sort.column.nullable) ||
            valueProblem(idColumn, after.id))
        ) {
          throw dataErrors.invalidQuery([
            {
              field: 'page_token',
              message: 'page_token is not a valid page token for this sort',
              code: 'INVALID_PAGE_TOKEN',
            },
          ]);
        }
        const rows = await asTenantRead(kernel, p.tenantId, async (tx) => {
          const found = await listRecords(tx, m, p.tenantId, list, after, q.page_size + 1);
          await expandRelations(tx, models, m, p.tenantId, found.slice(0, q.page_size), list.expand);
          return found;
        }).catch((error: unknown) => {
          // values are checked against their column first; one PostgreSQL still cannot hold is a 400 too, never a 500
          const fields = databaseErrorFields(error);
          throw (fields && readProblem(fields)) ?? error;
        });
        return toPage(rows, q.page_size, view, (row) => ({
          v: row[list.sort.column.name] === null ? null : textOf(row[list.sort.column.name]),
          id: textOf(row.id),
        }));
      },
    );

    r.get(
      '/data/:module/:model/:id',
      {
        config: { access: 'bearer' },
        schema: {
          summary: 'A record of a generated model',
          params: z.object({ module: Slug, model: Name, id: z.string().min(1).max(256) }),
          response: { 200: Record },
        },
      },
      async (request) => {
        const p = callerOf(request);
        const { module, model, id } = request.params;
        const { models, archived } = await resolve(p, module);
        const m = gateModel(models, module, model, 'read', p.permissions, archived);
        const row = await asTenantRead(kernel, p.tenantId, (tx) => findRecord(tx, m, p.tenantId, id));
        if (!row) throw dataErrors.recordNotFound();
        return view(row);
      },
    );
  },
});
