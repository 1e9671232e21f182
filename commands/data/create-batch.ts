import { DomainError } from '../../domain/shared/errors';
import type { Model } from '../../domain/data/catalog';
import type { RecordEvent } from '../../domain/data/record';
import type { CausationMeta } from '../../infra/eventstore/event-store';
import { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import type { Kernel } from '../../infra/kernel';
import type { Tx } from '../../infra/postgres/db';
import type { Waiting } from '../../infra/postgres/group-commit';
import { answer, batcherPerKernel, CommitUnknown, GroupCommit, refuse } from '../../infra/postgres/group-commit';
import { pgErrorCode } from '../../infra/postgres/db';
import type { BoundStatement } from '../../infra/postgres/inline';
import { pipelined, statement } from '../../infra/postgres/pipeline';
import { insertTasks } from '../../infra/tasks';
import { stageAuditSql } from '../../infra/audit';
import { usageLimits } from '../../infra/usage-limits';
import { RecordAggregate, recordStream } from './aggregates';
import { dataContext, tenantScopeStatement } from './context';
import type { WriteTarget } from './records';
import { adopt, createRecord, refOf } from './records';
import { statementOf } from './statements';

type Row = Record<string, unknown>;

/** a generated create whose body was validated against its model (validateRecord) */
export interface BatchedCreate {
  meta: CausationMeta;
  target: WriteTarget;
  /** the request's body, for a create that runs alone */
  body: unknown;
  /** the body as validateRecord answered it */
  values: Row;
}

type WaitingCreate = Waiting<BatchedCreate, Row>;

/**
 * Group commit of the generated creates sent without an Idempotency-Key (issue 25): the creates
 * arriving while earlier batches are in flight share one transaction of three round trips,
 * whatever their number:
 *
 *   1. BEGIN (then the records limit of each tenant of the batch, for all of its creates at once,
 *      under the tenant's lock as a create alone takes it: usageLimits.assertRoom);
 *   2. per tenant, its scope (tenant setting and data role) and its creates' INSERTs … ON CONFLICT
 *      DO NOTHING RETURNING *, then RESET ROLE;
 *   3. the creates' events (each with its row as stored), the inline projections; COMMIT.
 *
 * A create alone takes six. Each create is the same event, row and answer as alone. A create the
 * table refused with a unique key (no row returned) and the creates of a tenant whose limit the
 * batch would pass run alone after the commit (commands/data/records.ts createRecord, under the
 * kernel's command runner), which answers them exactly — the 409 with its field, the 402 at the
 * exact limit. When anything else fails before the COMMIT was sent (a foreign key or check the
 * table refused, a deadlock), the batch rolls back and all its creates run alone; when the COMMIT's
 * fate is unknown (the connection was lost), its creates fail as a create alone would.
 */
export class CreateBatcher {
  private readonly group: GroupCommit<BatchedCreate, Row>;

  constructor(
    private readonly kernel: Kernel,
    options: { maxSize: number; concurrency: number },
  ) {
    this.group = new GroupCommit(
      kernel.db,
      {
        span: 'data.create.batch',
        ...options,
        onFailure: (error, creates) =>
          kernel.logger.warn({ err: error, creates }, 'a batch of creates failed; they run alone'),
      },
      (client, batch) => this.run(client, batch),
      // a create on the ordinary path: its own transaction under the command runner (retries included)
      ({ meta, target, body }) => kernel.commands.run(meta, (uow) => createRecord(kernel, uow, target, body)),
    );
  }

  submit(create: BatchedCreate): Promise<Row> {
    return this.group.submit(create);
  }

  /** the batch's transaction; answers what it committed and returns the creates left to run alone */
  private async run(client: Tx, batch: WaitingCreate[]): Promise<WaitingCreate[]> {
    const { kernel } = this;
    const later: WaitingCreate[] = [];
    // decided in memory first: each create's event (a fresh stream under a new id) and its INSERT
    const decided: { w: WaitingCreate; uow: UnitOfWork; event: RecordEvent }[] = [];
    for (const w of batch) {
      const { meta, target, values } = w.item;
      const uow = new UnitOfWork(client, meta, kernel.store);
      try {
        const id = kernel.ids.next();
        const loaded = uow.fresh(RecordAggregate, recordStream(meta.tenantId, target.slug, target.model.name, id));
        const { events } = uow.decide(RecordAggregate, loaded, {
          type: 'CreateRecord',
          ref: refOf(target.slug, target.model, id),
          values,
        });
        decided.push({ w, uow, event: events[0]! });
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        refuse(w, error);
      }
    }
    if (decided.length === 0) return later;

    await client.query('BEGIN');
    // the records limit per tenant, for all of its creates at once; a tenant the batch would take past it runs alone
    const byTenant = new Map<string, typeof decided>();
    for (const d of decided) {
      const tenantId = d.w.item.meta.tenantId;
      byTenant.set(tenantId, [...(byTenant.get(tenantId) ?? []), d]);
    }
    const limits = usageLimits(kernel);
    // in ascending order, as two batches must take their tenants' locks (else they could wait on each other)
    for (const [tenantId, creates] of [...byTenant].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      try {
        await limits.assertRoom(client, tenantId, 'records', creates.length);
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        byTenant.delete(tenantId);
        later.push(...creates.map((d) => d.w));
      }
    }
    if (byTenant.size === 0) {
      await client.query('ROLLBACK');
      return later;
    }

    const useRole = await dataContext(kernel).useRole();
    const statements: BoundStatement[] = [];
    const inserted: { d: (typeof decided)[number]; model: Model; at: number }[] = [];
    for (const [tenantId, creates] of byTenant) {
      statements.push(tenantScopeStatement(tenantId, useRole));
      for (const d of creates) {
        const model = d.w.item.target.model;
        inserted.push({ d, model, at: statements.length });
        // a unique key another row holds answers no row instead of failing the batch: that create runs alone
        statements.push(statementOf(model, tenantId, d.event, { replay: true }));
      }
    }
    if (useRole) statements.push(statement('RESET ROLE'));
    const results = await pipelined(client, statements);

    const committing: { w: WaitingCreate; row: Row; uow: UnitOfWork }[] = [];
    for (const { d, model, at } of inserted) {
      const stored = results[at]!.rows[0] as Row | undefined;
      if (!stored) {
        later.push(d.w);
        continue;
      }
      if (stored.id === undefined) throw new Error(`the insert into ${model.schema}.${model.table} returned no id`);
      committing.push({ w: d.w, row: adopt(d.event, stored), uow: d.uow });
    }
    if (committing.length === 0) {
      await client.query('ROLLBACK');
      return later;
    }

    const { statements: appended, events } = kernel.store.prepareAppends(
      committing.flatMap((c) => c.uow.takePending().map((request) => ({ request, meta: c.w.item.meta }))),
      kernel.clock.now(),
    );
    const tasks = committing.flatMap((c) => c.uow.takePendingTasks());
    const audits = committing.flatMap((c) => c.uow.takePendingAudits());
    try {
      await pipelined(client, [
        ...appended,
        ...(tasks.length ? [insertTasks(tasks)] : []),
        ...(audits.length ? [stageAuditSql(audits)] : []),
        ...kernel.projections.inlineStatements(events),
        statement('COMMIT'),
      ]);
    } catch (error) {
      // a statement PostgreSQL refused aborted the transaction: its COMMIT rolled back; anything else may have committed
      if (pgErrorCode(error) === undefined) throw new CommitUnknown(error);
      throw error;
    }
    for (const c of committing) {
      const callbacks = c.uow.takeAfterCommit();
      if (callbacks.length) await kernel.commands.afterCommit(callbacks);
      answer(c.w, c.row);
    }
    return later;
  }
}

/** this process's batcher of generated creates */
export const createBatcher = batcherPerKernel((kernel, options) => new CreateBatcher(kernel, options));
