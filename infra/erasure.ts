import type { ErasurePhase, ErasureRequested, TenantErased } from '../domain/shared/erasure';
import {
  ERASURE_REQUESTED,
  erasureDecider,
  ErasureRequested as ErasureRequestedSchema,
  TENANT_ERASED_SUFFIX,
} from '../domain/shared/erasure';
import { streamIdOf } from '../domain/shared/event';
import { defineAggregate } from './eventstore/aggregate';
import type { LogCheckpoint } from './eventstore/event-store';
import { checkpointOf, LOG_START } from './eventstore/event-store';
import type { UnitOfWork } from './eventstore/unit-of-work';
import type { Kernel } from './kernel';
import { systemMeta } from './kernel';
import type { Queryable } from './postgres/db';
import { pgErrorCode } from './postgres/db';

/**
 * The kernel's side of a terminated tenant's erasure (domain/shared/erasure.ts): billing records
 * requests, each service's eraser reads them from the global log of the event store with a
 * checkpoint of its own (like billing's tenant reactor), erases what it holds and records its
 * confirmation. The services taking part say so in es.erasure_participants when their worker
 * starts, so billing waits for exactly the services this platform runs.
 */
export const ErasureAggregate = defineAggregate({
  name: 'erasure',
  decider: erasureDecider,
  stateSchema: 'erasure.v1',
});

/** one service's erasure of a tenant for its phase */
export interface Eraser {
  /** the domain of its events (`auth` for identity): the confirmation is `<domain>.tenant.erased` */
  domain: string;
  phase: ErasurePhase;
  /** erases what the service holds of the tenant; safe to run again (a crash before the confirmation repeats it) */
  erase(kernel: Kernel, tenantId: string): Promise<void>;
}

/** billing: asks every service of the phase to erase the tenant (in billing's unit of work) */
export const requestErasure = async (uow: UnitOfWork, tenantId: string, request: ErasureRequested): Promise<void> => {
  const loaded = await uow.load(ErasureAggregate, streamIdOf('erasure', tenantId, 'billing'));
  uow.decide(ErasureAggregate, loaded, { type: 'Request', request });
};

/** the services that take part in a phase on this platform */
export const participantsOf = async (q: Queryable, phase: ErasurePhase): Promise<string[]> => {
  const { rows } = await q.query<{ domain: string }>(
    'SELECT domain FROM es.erasure_participants WHERE phase = $1 ORDER BY domain',
    [phase],
  );
  return rows.map((r) => r.domain);
};

/** the services that confirmed a phase of one termination of the tenant */
export const confirmationsOf = async (
  q: Queryable,
  tenantId: string,
  terminationId: string,
  phase: ErasurePhase,
): Promise<string[]> => {
  const { rows } = await q.query<{ service: string }>(
    `SELECT DISTINCT data->>'service' AS service FROM es.events
     WHERE tenant_id = $1 AND stream_id LIKE $2 AND type LIKE $3 AND data->>'terminationId' = $4 AND data->>'phase' = $5`,
    [tenantId, `erasure:${tenantId}:%`, `%${TENANT_ERASED_SUFFIX}`, terminationId, phase],
  );
  return rows.map((r) => r.service);
};

/** true when every service of the phase on this platform has confirmed */
export const phaseErased = async (
  q: Queryable,
  tenantId: string,
  terminationId: string,
  phase: ErasurePhase,
): Promise<boolean> => {
  const [participants, confirmed] = await Promise.all([
    participantsOf(q, phase),
    confirmationsOf(q, tenantId, terminationId, phase),
  ]);
  return participants.every((p) => confirmed.includes(p));
};

/** a service takes part: billing waits for its confirmation from now on */
export const registerParticipant = async (kernel: Kernel, eraser: Eraser): Promise<void> => {
  await kernel.db.query(
    `INSERT INTO es.erasure_participants (domain, phase, registered_at) VALUES ($1, $2, $3)
     ON CONFLICT (domain) DO UPDATE SET phase = EXCLUDED.phase`,
    [eraser.domain, eraser.phase, kernel.clock.now()],
  );
};

const BATCH = 200;

const later = (a: LogCheckpoint, b: LogCheckpoint): LogCheckpoint =>
  a.transactionId > b.transactionId || (a.transactionId === b.transactionId && a.position >= b.position) ? a : b;

/**
 * One pass of a service's eraser: the erasure requests after its checkpoint; for those of its
 * phase, the erasure and then the confirmation (its own unit of work, after the erasure: a crash
 * in between erases again). Returns how many requests it saw.
 */
export const eraseStep = async (kernel: Kernel, eraser: Eraser): Promise<number> => {
  const name = `reactor:erasure.${eraser.domain}`;
  await kernel.db.query('INSERT INTO es.checkpoints (name) VALUES ($1) ON CONFLICT DO NOTHING', [name]);
  const { rows } = await kernel.db.query<{ transaction_id: string; position: string }>(
    'SELECT transaction_id::text AS transaction_id, position FROM es.checkpoints WHERE name = $1',
    [name],
  );
  const after = rows[0]
    ? { transactionId: BigInt(rows[0].transaction_id), position: BigInt(rows[0].position) }
    : LOG_START;
  const head = await kernel.store.headCheckpoint(kernel.db);
  const events = await kernel.store.readAll(kernel.db, after, BATCH, { types: [ERASURE_REQUESTED] });
  for (const event of events) {
    const request = ErasureRequestedSchema.parse(event.data);
    if (request.phase !== eraser.phase) continue;
    await eraser.erase(kernel, event.tenantId);
    const confirmation: TenantErased = {
      terminationId: request.terminationId,
      phase: request.phase,
      service: eraser.domain,
    };
    await kernel.commands.run(systemMeta(event.tenantId), async (uow) => {
      const loaded = await uow.load(ErasureAggregate, streamIdOf('erasure', event.tenantId, eraser.domain));
      uow.decide(ErasureAggregate, loaded, { type: 'Confirm', domain: eraser.domain, confirmation });
    });
    kernel.logger.info(
      { tenantId: event.tenantId, service: eraser.domain, phase: request.phase },
      'a terminated tenant erased for its phase',
    );
  }
  const last = events.length ? checkpointOf(events[events.length - 1]!) : after;
  const next = events.length === BATCH ? last : later(last, head);
  await kernel.db.query(
    `UPDATE es.checkpoints SET transaction_id = $2::xid8, position = $3, updated_at = now()
     WHERE name = $1 AND (transaction_id, position) < ($2::xid8, $3::bigint)`,
    [name, next.transactionId.toString(), next.position.toString()],
  );
  return events.length;
};

const UNDEFINED_TABLE = '42P01';

/**
 * Deletes the tenant's rows of these tables (schema.table or views over them), skipping a table
 * this platform does not have (a service not installed). Returns how many rows went.
 */
export const deleteTenantRows = async (q: Queryable, tenantId: string, tables: readonly string[]): Promise<number> => {
  let deleted = 0;
  for (const table of tables) {
    if (!/^[a-z_]+\.[a-z_0-9]+$/.test(table)) throw new Error(`not a table name: ${table}`);
    const { rows } = await q.query<{ ok: string | null }>('SELECT to_regclass($1)::text AS ok', [table]);
    if (!rows[0]?.ok) continue;
    try {
      deleted += (await q.query(`DELETE FROM ${table} WHERE tenant_id = $1`, [tenantId])).rowCount ?? 0;
    } catch (error) {
      if (pgErrorCode(error) !== UNDEFINED_TABLE) throw error;
    }
  }
  return deleted;
};

/**
 * Deletes the tenant's streams of these aggregates from the event store (events and stored
 * state): a read model rebuilt later must not bring the erased data back. The erasure journal
 * (`erasure:`) and what is kept (billing, money) are never named here.
 */
export const deleteTenantStreams = async (
  q: Queryable,
  tenantId: string,
  aggregates: readonly string[],
): Promise<number> => {
  let deleted = 0;
  for (const aggregate of aggregates) {
    const prefix = `${streamIdOf(aggregate, tenantId, '')}%`;
    deleted +=
      (await q.query('DELETE FROM es.events WHERE tenant_id = $1 AND stream_id LIKE $2', [tenantId, prefix]))
        .rowCount ?? 0;
    await q.query('DELETE FROM es.streams WHERE tenant_id = $1 AND stream_id LIKE $2', [tenantId, prefix]);
  }
  return deleted;
};
