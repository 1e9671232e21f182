import { canRedrive, redriveSchedule } from '../../domain/events/dlq';
import { eventErrors } from '../../domain/events/errors';
import type { EventView } from '../../domain/events/views';
import { auditRecord, stageAudit } from '../../infra/audit';
import type { Principal } from '../../infra/http/auth';
import type { Kernel } from '../../infra/kernel';
import type { Tx } from '../../infra/postgres/db';
import type { QueueShape } from '../../infra/queue';
import { claimItems, runPaced } from '../../infra/queue';
import { inTransaction } from '../../infra/postgres/db';
import { DLQ_COLUMNS, findDlq, subscriptionById, type DlqRow } from './lookups';
import { eventsContext } from './context';
import { attemptDelivery, targetOf } from './delivery';

const actorOf = (p: Principal): string => (p.impersonatorId ? `${p.userId} (by ${p.impersonatorId})` : p.userId);

/**
 * every redrive is audited (spec 002 via the issue): one record per dead letter, on its entity
 * history, staged in the audit outbox in the redrive's own transaction
 */
const auditRedrive = (
  kernel: Kernel,
  tx: Tx,
  action: string,
  rows: Pick<DlqRow, 'id' | 'tenant_id' | 'event_id' | 'topic' | 'type' | 'subscription_id' | 'status'>[],
  actorId: string,
  traceId: string,
  after: string,
) =>
  stageAudit(
    tx,
    rows.map((row) =>
      auditRecord(
        {
          action,
          entityType: 'events.dlq',
          entityId: row.id,
          tenantId: row.tenant_id,
          actorId,
          traceId,
          timestamp: kernel.clock.now().toISOString(),
          before: { status: row.status },
          after: { status: after },
          meta: { eventId: row.event_id, topic: row.topic, type: row.type, subscriptionId: row.subscription_id },
        },
        kernel.ids.next(),
      ),
    ),
  );

/**
 * Schedules dead letters of one tenant for redelivery at DLQ_REPLAY_RATE_LIMIT per second, after
 * whatever the tenant already has scheduled (a per-tenant lock makes concurrent redrives queue up).
 */
const schedule = async (kernel: Kernel, tx: Tx, tenantId: string, ids: string[]): Promise<DlqRow[]> => {
  if (ids.length === 0) return [];
  await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`events.dlq-redrive:${tenantId}`]);
  const { rows } = await tx.query<{ last: Date | null }>(
    `SELECT max(due_at) AS last FROM events.dlq WHERE tenant_id = $1 AND status = 'retrying'`,
    [tenantId],
  );
  const now = kernel.clock.now();
  const due = redriveSchedule(
    ids.length,
    now.getTime(),
    rows[0]?.last?.getTime() ?? null,
    eventsContext(kernel).settings.replayRatePerSecond,
  );
  return (
    await tx.query<DlqRow>(
      `UPDATE events.dlq d SET status = 'retrying', due_at = t.due, updated_at = $3
      FROM unnest($2::uuid[], $4::timestamptz[]) AS t(id, due) WHERE d.tenant_id = $1 AND d.id = t.id AND d.status = 'pending'
      RETURNING ${DLQ_COLUMNS.split(',')
        .map((c) => `d.${c.trim()}`)
        .join(', ')}`,
      [tenantId, ids, now, due.map((t) => new Date(t))],
    )
  ).rows;
};

/** POST /events/dlq/:id/retry: a pending dead letter is redelivered (202, retrying) */
export const retryDeadLetter = async (
  kernel: Kernel,
  principal: Principal,
  id: string,
  traceId: string,
): Promise<DlqRow> => {
  const row = await inTransaction(kernel.db, async (tx) => {
    const found = await findDlq(tx, principal.tenantId, id, principal.source);
    if (!found) throw eventErrors.dlqEntryNotFound();
    if (!canRedrive(found.status)) throw eventErrors.dlqEntryNotPending(found.status);
    const [scheduled] = await schedule(kernel, tx, principal.tenantId, [found.id]);
    if (!scheduled) throw eventErrors.dlqEntryNotPending('retrying');
    await auditRedrive(
      kernel,
      tx,
      'events.dlq.retried',
      [{ ...scheduled, status: 'pending' }],
      actorOf(principal),
      traceId,
      'retrying',
    );
    return scheduled;
  });
  return row;
};

/**
 * POST /events/dlq/replay-all: every pending dead letter of the tenant (of the module, for a module;
 * optionally of one topic or subscription) is redelivered at the replay rate; resolved ones in the
 * same scope are skipped and counted.
 */
export const replayAll = async (
  kernel: Kernel,
  principal: Principal,
  scope: { topic?: string; subscriptionId?: string },
  traceId: string,
): Promise<{ replayed: number; skipped_already_resolved: number }> => {
  const { scheduled, resolved } = await inTransaction(kernel.db, async (tx) => {
    const { rows } = await tx.query<{ id: string; status: string }>(
      `SELECT id, status FROM events.dlq
       WHERE tenant_id = $1 AND ($2::text IS NULL OR source = $2) AND ($3::text IS NULL OR topic = $3) AND ($4::uuid IS NULL OR subscription_id = $4)
         AND status IN ('pending', 'resolved')
       ORDER BY created_at, id`,
      [principal.tenantId, principal.source ?? null, scope.topic ?? null, scope.subscriptionId ?? null],
    );
    const pending = rows.filter((r) => r.status === 'pending').map((r) => r.id);
    const scheduled = await schedule(kernel, tx, principal.tenantId, pending);
    await auditRedrive(
      kernel,
      tx,
      'events.dlq.replayed',
      scheduled.map((row) => ({ ...row, status: 'pending' })),
      actorOf(principal),
      traceId,
      'retrying',
    );
    return { scheduled, resolved: rows.length - pending.length };
  });
  return { replayed: scheduled.length, skipped_already_resolved: resolved };
};

/** DELETE /events/dlq/:id: a pending dead letter is marked resolved (a resolved one stays as it is) */
export const resolveDeadLetter = async (
  kernel: Kernel,
  principal: Principal,
  id: string,
  traceId: string,
): Promise<DlqRow> => {
  const found = await findDlq(kernel.db, principal.tenantId, id, principal.source);
  if (!found) throw eventErrors.dlqEntryNotFound();
  if (found.status === 'resolved') return found;
  if (found.status !== 'pending') throw eventErrors.dlqEntryNotPending(found.status);
  return inTransaction(kernel.db, async (tx) => {
    const { rows } = await tx.query<DlqRow>(
      `UPDATE events.dlq SET status = 'resolved', resolved_at = $3, resolved_by = $4, updated_at = $3, due_at = NULL
      WHERE tenant_id = $1 AND id = $2 AND status = 'pending' RETURNING ${DLQ_COLUMNS}`,
      [principal.tenantId, found.id, kernel.clock.now(), actorOf(principal)],
    );
    if (!rows[0]) throw eventErrors.dlqEntryNotPending('retrying');
    await auditRedrive(kernel, tx, 'events.dlq.resolved', [found], actorOf(principal), traceId, 'resolved');
    return rows[0];
  });
};

/** events.dlq as a queue of the kernel's (infra/queue.ts): the entries a redrive scheduled (retrying), by due time */
const DEAD_LETTERS: QueueShape = { table: 'events.dlq', key: ['id'] };

/** when each tenant's last redelivery left this process (real time): redeliveries are paced at the rate whatever their due times say */
const lastSent = new WeakMap<Kernel, Map<string, number>>();

/**
 * The redrive worker's step: claims the dead letters whose redelivery is due (a lease of the webhook
 * deadline and a margin: a worker that dies leaves them to another), hands each to its
 * subscription's handler once — one tenant's one after another, never closer than 1 / rate seconds
 * apart, so that entries claimed late do not go out in a burst — then marks it resolved, or pending
 * with one more failure. Returns how many it handled and when the next one is due.
 */
export const redriveDue = async (
  kernel: Kernel,
  limit: number,
): Promise<{ handled: number; nextDueAt: Date | null }> => {
  const ctx = eventsContext(kernel);
  const now = kernel.clock.now();
  const lease = new Date(now.getTime() + ctx.settings.webhookTimeoutMs + 30_000);
  const rows = await claimItems<DlqRow & { scheduled_at: Date }>(kernel.db, DEAD_LETTERS, {
    due: `item.status = 'retrying' AND item.due_at <= $1`,
    order: 'item.due_at',
    // the lease is the due time pushed past the redelivery's deadline
    set: 'due_at = $2',
    carry: ['due_at'],
    returning: `${DLQ_COLUMNS.split(',')
      .map((c) => `t.${c.trim()}`)
      .join(', ')}, due.due_at AS scheduled_at`,
    values: [now, lease],
    limit,
  });
  const sent = lastSent.get(kernel) ?? new Map<string, number>();
  lastSent.set(kernel, sent);
  await runPaced(
    rows.sort((a, b) => a.scheduled_at.getTime() - b.scheduled_at.getTime()),
    (row) => row.tenant_id,
    1000 / ctx.settings.replayRatePerSecond,
    sent,
    (row) => redeliver(kernel, ctx, row),
  );
  const { rows: next } = await kernel.db.query<{ due: Date | null }>(
    `SELECT min(due_at) AS due FROM events.dlq WHERE status = 'retrying'`,
  );
  return { handled: rows.length, nextDueAt: next[0]?.due ?? null };
};

const redeliver = async (kernel: Kernel, ctx: ReturnType<typeof eventsContext>, row: DlqRow): Promise<void> => {
  const sub = await subscriptionById(kernel.db, row.subscription_id);
  const target = sub && sub.status === 'active' ? await targetOf(kernel, ctx, sub) : null;
  const outcome =
    sub && target
      ? await attemptDelivery(kernel, ctx, sub, target, JSON.parse(row.event) as EventView, row.failure_count + 1)
      : {
          ok: false as const,
          error:
            sub?.status === 'active'
              ? 'no handler for the subscription in the process that redelivered it'
              : 'the subscription was deleted',
        };
  const at = kernel.clock.now();
  if (outcome.ok) {
    await kernel.db.query(
      `UPDATE events.dlq SET status = 'resolved', resolved_at = $2, resolved_by = 'redelivery', due_at = NULL, updated_at = $2 WHERE id = $1 AND status = 'retrying'`,
      [row.id, at],
    );
  } else {
    await kernel.db.query(
      `UPDATE events.dlq SET status = 'pending', failure_count = failure_count + 1, last_error = $2, due_at = NULL, updated_at = $3 WHERE id = $1 AND status = 'retrying'`,
      [row.id, outcome.error, at],
    );
  }
};
