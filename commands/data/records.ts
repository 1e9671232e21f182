import type { Action } from '../../domain/data/access';
import { gateCaller, gateModel, gateModule } from '../../domain/data/access';
import type { Model } from '../../domain/data/catalog';
import type { WriteContext } from '../../domain/data/database-errors';
import { databaseErrorFields, writeProblem } from '../../domain/data/database-errors';
import { dataErrors } from '../../domain/data/errors';
import type { RecordEvent, RecordRef } from '../../domain/data/record';
import type { Statement } from './statements';
import { statementOf } from './statements';
import { validateRecord } from '../../domain/data/validation';
import type { Principal } from '../../infra/http/auth';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import type { Kernel } from '../../infra/kernel';
import { usageLimits } from '../../infra/usage-limits';
import type { Queryable } from '../../infra/postgres/db';
import { RecordAggregate, recordStream } from './aggregates';
import { cachedModuleRowOf, dataContext } from './context';
import type { Dependent } from './dependents';
import { dependentsOf, dependentsNow } from './dependents';
import { asTenant } from './tenant-scope';

type Row = Record<string, unknown>;

/** a generated model a write addresses, with the module's other models (relations reach them) */
export interface WriteTarget {
  slug: string;
  model: Model;
  models: Model[];
}

/** the model a write addresses, with the caller's permission checked (module installed and loaded, autoApi, not archived) */
export const writableModel = async (
  kernel: Kernel,
  principal: Principal,
  slug: string,
  model: string,
  action: Action,
): Promise<WriteTarget> => {
  const ctx = dataContext(kernel);
  gateCaller(principal, slug);
  const row = gateModule(await cachedModuleRowOf(kernel, slug, principal.tenantId));
  const { models, archived } = await ctx.catalog.of(kernel.db, row);
  return { slug, model: gateModel(models, slug, model, action, principal.permissions, archived), models };
};

/** a row as the API shows it: every column but tenant_id, JSON-ready */
export const recordView = (row: Row): Row => {
  const { tenant_id: _tenant, ...rest } = row;
  return JSON.parse(JSON.stringify(rest)) as Row;
};

/**
 * Runs statements on the module's tables as the tenant. A refusal of PostgreSQL's (a key, a
 * reference, a check, a value it cannot hold) becomes the data layer's problem here, in one place
 * (domain/data/database-errors.ts), and fails the command: its transaction rolls back, so no
 * event, stored state or audit record is left of it.
 */
const asTenantWrite = async <T>(
  kernel: Kernel,
  uow: UnitOfWork,
  write: Omit<WriteContext, 'models' | 'model'> & { target: WriteTarget },
  fn: (tx: Queryable) => Promise<T>,
): Promise<T> => {
  const useRole = await dataContext(kernel).useRole();
  try {
    return await asTenant(uow.tx, uow.meta.tenantId, useRole, () => fn(uow.tx));
  } catch (error) {
    const fields = databaseErrorFields(error);
    const problem =
      fields &&
      writeProblem(fields, {
        models: write.target.models,
        model: write.target.model,
        verb: write.verb,
        fields: write.fields,
      });
    throw problem ?? error;
  }
};

const rowOf = async (tx: Queryable, s: Statement): Promise<Row | null> =>
  (await tx.query<Row>(s.text, s.values)).rows[0] ?? null;

/** the event carries the row as stored (defaults filled by PostgreSQL included), so a rebuild from the log gives the same row */
export const adopt = (event: RecordEvent, stored: Row): Row => {
  const view = recordView(stored);
  const { id: _id, ...values } = view;
  if (event.data.after) Object.assign(event.data.after, values);
  return view;
};

export const refOf = (slug: string, m: Model, id: string): RecordRef => ({ module: slug, model: m.name, id });

/**
 * Records what the foreign keys' actions did to the rows referencing a deleted or re-keyed row
 * (ON DELETE CASCADE, SET NULL, SET DEFAULT; ON UPDATE likewise): PostgreSQL made the change in
 * the same statement, and each changed record gets its event, so the log still says what every
 * table holds. A row no event ever created (written by the module's own SQL) gets none.
 */
const recordDependents = async (uow: UnitOfWork, t: WriteTarget, changed: Dependent[]): Promise<void> => {
  for (const d of changed) {
    const id = String(d.before.id);
    const loaded = await uow.load(RecordAggregate, recordStream(uow.meta.tenantId, t.slug, d.model.name, id), {
      lock: true,
    });
    if (!loaded.state.exists) continue;
    const ref = refOf(t.slug, d.model, id);
    if (d.after === null) uow.decide(RecordAggregate, loaded, { type: 'DeleteRecord', ref });
    else {
      const { id: _id, ...changes } = recordView(d.after);
      uow.decide(RecordAggregate, loaded, { type: 'UpdateRecord', ref, changes });
    }
  }
};

export const createRecord = async (kernel: Kernel, uow: UnitOfWork, t: WriteTarget, body: unknown): Promise<Row> => {
  const m = t.model;
  const values = validateRecord(m, body, 'create');
  // the plan's records limit, held under the tenant's lock to the commit (the gateway's 402 answers earlier)
  await usageLimits(kernel).assertRoom(uow.tx, uow.meta.tenantId, 'records', 1);
  const id = kernel.ids.next();
  const loaded = uow.fresh(RecordAggregate, recordStream(uow.meta.tenantId, t.slug, m.name, id));
  const { events } = uow.decide(RecordAggregate, loaded, {
    type: 'CreateRecord',
    ref: refOf(t.slug, m, id),
    values,
  });
  const event = events[0]!;
  const stored = await asTenantWrite(kernel, uow, { target: t, verb: 'created', fields: Object.keys(values) }, (tx) =>
    rowOf(tx, statementOf(m, uow.meta.tenantId, event)),
  );
  if (!stored) throw new Error(`the insert into ${m.schema}.${m.table} returned no row`);
  return adopt(event, stored);
};

/** the record must be the tenant's: another tenant's id is simply not found (its stream is another) */
export const updateRecord = async (
  kernel: Kernel,
  uow: UnitOfWork,
  t: WriteTarget,
  id: string,
  body: unknown,
): Promise<Row> => {
  const m = t.model;
  const changes = validateRecord(m, body, 'patch');
  const loaded = await uow.load(RecordAggregate, recordStream(uow.meta.tenantId, t.slug, m.name, id), { lock: true });
  const { events } = uow.decide(RecordAggregate, loaded, {
    type: 'UpdateRecord',
    ref: refOf(t.slug, m, id),
    changes,
  });
  const event = events[0]!;
  const fields = Object.keys(changes);
  const { stored, changed } = await asTenantWrite(kernel, uow, { target: t, verb: 'updated', fields }, async (tx) => {
    const dependents = await dependentsOf(tx, t.models, m, uow.meta.tenantId, id, { changed: fields });
    // a stream whose row was never stored (a create an earlier version answered without its row) is not found
    const row = await rowOf(tx, statementOf(m, uow.meta.tenantId, event));
    if (!row) throw dataErrors.recordNotFound();
    return { stored: row, changed: await dependentsNow(tx, uow.meta.tenantId, dependents) };
  });
  const view = adopt(event, stored);
  await recordDependents(uow, t, changed);
  return view;
};

/** a delete records, before its own event, what the foreign keys' actions did to the rows referencing it */
export const deleteRecord = async (kernel: Kernel, uow: UnitOfWork, t: WriteTarget, id: string): Promise<void> => {
  const m = t.model;
  const loaded = await uow.load(RecordAggregate, recordStream(uow.meta.tenantId, t.slug, m.name, id), { lock: true });
  if (!loaded.state.exists) throw dataErrors.recordNotFound();
  const ref = refOf(t.slug, m, id);
  const statement = statementOf(m, uow.meta.tenantId, {
    type: `data.${t.slug}.${m.name}.deleted`,
    data: { ...ref, before: null, after: null },
  });
  const changed = await asTenantWrite(kernel, uow, { target: t, verb: 'deleted', fields: [] }, async (tx) => {
    const dependents = await dependentsOf(tx, t.models, m, uow.meta.tenantId, id, 'deleted');
    if (!(await rowOf(tx, statement))) throw dataErrors.recordNotFound();
    return dependentsNow(tx, uow.meta.tenantId, dependents);
  });
  await recordDependents(uow, t, changed);
  uow.decide(RecordAggregate, loaded, { type: 'DeleteRecord', ref });
};
