import type { Action } from '../../domain/data/access';
import { gateModel, gateModule } from '../../domain/data/access';
import type { Model } from '../../domain/data/catalog';
import type { RecordEvent, RecordRef } from '../../domain/data/record';
import { statementOf } from '../../domain/data/statements';
import { validateRecord } from '../../domain/data/validation';
import type { Principal } from '../../infra/http/auth';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import type { Kernel } from '../../infra/kernel';
import type { Queryable } from '../../infra/postgres/db';
import { RecordAggregate, recordStream } from './aggregates';
import { moduleRowOf } from './catalog';
import { dataContext } from './context';
import { asTenant } from './tenant-scope';

type Row = Record<string, unknown>;

/** the model a write addresses, with the caller's permission checked (module installed and loaded, autoApi, not archived) */
export const writableModel = async (
  kernel: Kernel,
  principal: Principal,
  slug: string,
  model: string,
  action: Action,
): Promise<Model> => {
  const ctx = dataContext(kernel);
  const row = gateModule(await moduleRowOf(kernel.db, slug, principal.tenantId));
  const { models, archived } = await ctx.catalog.of(kernel.db, row);
  return gateModel(models, slug, model, action, principal.permissions, archived);
};

/** a row as the API shows it: every column but tenant_id, JSON-ready */
export const recordView = (row: Row): Row => {
  const { tenant_id: _tenant, ...rest } = row;
  return JSON.parse(JSON.stringify(rest)) as Row;
};

/**
 * Applies the recorded event to the module's table as the tenant, and makes the event carry the
 * row as stored (defaults filled by PostgreSQL included), so a rebuild from the log gives the same row.
 */
const project = async (
  kernel: Kernel,
  tx: Queryable,
  m: Model,
  tenantId: string,
  event: RecordEvent,
): Promise<Row | null> => {
  const useRole = await dataContext(kernel).useRole();
  const statement = statementOf(m, tenantId, event);
  const stored = await asTenant(
    tx,
    tenantId,
    useRole,
    async () => (await tx.query<Row>(statement.text, statement.values)).rows[0] ?? null,
  );
  if (stored && event.data.after) {
    const { id: _id, ...values } = recordView(stored);
    Object.assign(event.data.after, values);
  }
  return stored;
};

const refOf = (slug: string, m: Model, id: string): RecordRef => ({ module: slug, model: m.name, id });

export const createRecord = async (
  kernel: Kernel,
  uow: UnitOfWork,
  slug: string,
  m: Model,
  body: unknown,
): Promise<Row> => {
  const values = validateRecord(m, body, 'create');
  const id = kernel.ids.next();
  const loaded = uow.fresh(RecordAggregate, recordStream(uow.meta.tenantId, slug, m.name, id));
  const { events } = uow.decide(RecordAggregate, loaded, { type: 'CreateRecord', ref: refOf(slug, m, id), values });
  const stored = await project(kernel, uow.tx, m, uow.meta.tenantId, events[0]!);
  return recordView(stored ?? { id, ...values });
};

/** the record must be the tenant's: another tenant's id is simply not found (its stream is another) */
export const updateRecord = async (
  kernel: Kernel,
  uow: UnitOfWork,
  slug: string,
  m: Model,
  id: string,
  body: unknown,
): Promise<Row> => {
  const changes = validateRecord(m, body, 'patch');
  const loaded = await uow.load(RecordAggregate, recordStream(uow.meta.tenantId, slug, m.name, id), { lock: true });
  const { events } = uow.decide(RecordAggregate, loaded, { type: 'UpdateRecord', ref: refOf(slug, m, id), changes });
  const stored = await project(kernel, uow.tx, m, uow.meta.tenantId, events[0]!);
  return recordView(stored ?? { id, ...events[0]!.data.after });
};

export const deleteRecord = async (
  kernel: Kernel,
  uow: UnitOfWork,
  slug: string,
  m: Model,
  id: string,
): Promise<void> => {
  const loaded = await uow.load(RecordAggregate, recordStream(uow.meta.tenantId, slug, m.name, id), { lock: true });
  const { events } = uow.decide(RecordAggregate, loaded, { type: 'DeleteRecord', ref: refOf(slug, m, id) });
  await project(kernel, uow.tx, m, uow.meta.tenantId, events[0]!);
};
