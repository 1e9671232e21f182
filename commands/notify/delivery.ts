import { PRIORITIES } from '../../domain/notify/priority';
import { rateScopes } from '../../domain/notify/rate';
import type { Kernel } from '../../infra/kernel';
import { literal } from '../../infra/postgres/inline';
import type { Tx } from '../../infra/postgres/db';
import { admitInWindows, leaseLapsed, pickSql, windowFull, withinDeadline } from '../../infra/queue';
import type { ChannelAdapter, DeliveryJob, DeliveryMessage, DeliveryOutcome } from './channels/adapter';
import { failure } from './channels/adapter';
import { continueTrace, continueTraces, type TracedItem } from '../../infra/observability/tracing';
import { channelConfig } from './channel-config';
import type { NotifyContext } from './context';
import type { HeadColumns } from './event-batch';
import { HEAD_JOIN, NotificationBatch } from './event-batch';

/** the queue's table; a pick joins each row (`d`) with its notification's head */
const DELIVERIES = { table: 'notify.deliveries', key: ['id'] } as const;
const FROM = `notify.deliveries d ${HEAD_JOIN}`;
/** a claim also reads the notification's first event (e): its attempts continue the trace of the send that queued it */
const CLAIM_FROM = `${FROM} LEFT JOIN es.events e ON e.stream_id = s.stream_id AND e.stream_version = 1`;
const RATE_WINDOWS = 'notify.rate_windows';

interface QueueRow extends HeadColumns {
  seq: string;
  module: string | null;
  rate_limited: boolean;
  channel_type: string;
  channel_id: string | null;
  priority: number;
  attempt: number;
  possible_duplicate: boolean;
  message: DeliveryMessage;
  created_at: Date;
  trace_id: string | null;
  span_id: string | null;
}

/** a claimed notification: what the worker sends, and its head for recording the outcome */
export interface Claimed {
  job: DeliveryJob;
  row: QueueRow;
}

const withTransaction = async <T>(kernel: Kernel, fn: (tx: Tx) => Promise<T>): Promise<T> => {
  const client = await kernel.db.connect();
  try {
    const result = await fn(client);
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
};

/**
 * Claims due notifications, critical first, then by due time: the kernel queue's pick, so several
 * workers share the queue without waiting on each other. A tenant (or module) whose
 * one-minute window is used up is skipped: its messages stay queued until the window ends
 * (delayed, never dropped). The claimed rows are marked sending with this worker's key and a
 * lease, the attempts' events recorded, and the transaction committed before anything is sent.
 */
export const claim = async (kernel: Kernel, ctx: NotifyContext, workerKey: bigint): Promise<Claimed[]> =>
  withTransaction(kernel, async (tx) => {
    const now = ctx.clock.now();
    const { settings } = ctx;
    const [, found] = (await tx.query(`BEGIN;
    ${pickSql(DELIVERIES, {
      columns: `d.id, d.seq, d.tenant_id, d.module, d.rate_limited, d.channel_type, d.channel_id, d.priority, d.attempt, d.possible_duplicate, d.message, d.created_at,
           s.version, s.state, s.state_schema, e.trace_id, e.span_id`,
      from: CLAIM_FROM,
      due: `d.state = 'queued' AND d.due_at <= ${literal(now)}
       AND NOT (d.rate_limited AND ${windowFull(RATE_WINDOWS, `'t:' || d.tenant_id`, settings.ratePerTenant, now)})
       AND NOT (d.rate_limited AND d.module IS NOT NULL AND ${windowFull(RATE_WINDOWS, `'m:' || d.tenant_id || ':' || d.module`, settings.ratePerModule, now)})`,
      order: 'd.priority DESC, d.due_at, d.seq',
      limit: settings.workerBatch,
      lockOf: 'd',
    })}`)) as unknown as [unknown, { rows: QueueRow[] }];
    const candidates = found.rows;
    if (candidates.length === 0) {
      await tx.query('COMMIT');
      return [];
    }
    const limits = { perTenant: settings.ratePerTenant, perModule: settings.ratePerModule };
    const scoped = candidates.map((r) => ({
      id: r.id,
      scopes: rateScopes({ tenantId: r.tenant_id, module: r.module, rateLimited: r.rate_limited }, limits),
    }));
    const { admitted, record } = await admitInWindows(tx, RATE_WINDOWS, scoped, now);
    const claimed = candidates.filter((r) => admitted.has(r.id));
    const batch = new NotificationBatch(kernel, tx);
    for (const row of claimed) {
      const [started] = batch.decide(row.tenant_id, await batch.loaded(row), {
        type: 'StartAttempt',
        now: now.toISOString(),
      });
      if (started?.type === 'notify.notification.sending') row.attempt = started.data.attempt;
    }
    const statements = [...batch.statements()];
    if (record) statements.push(record);
    if (claimed.length) {
      statements.push(`UPDATE notify.deliveries SET state = 'sending', attempt = attempt + 1, claimed_by = ${workerKey.toString()}, lease_until = ${literal(new Date(now.getTime() + settings.leaseMs))}
      WHERE id = ANY(${literal(claimed.map((r) => r.id))}::uuid[])`);
    }
    await tx.query([...statements, 'COMMIT'].join(';\n'));
    const configs = await Promise.all(
      claimed.map((r) => (r.channel_id ? channelConfig(kernel, ctx, r.tenant_id, r.channel_id) : Promise.resolve({}))),
    );
    return claimed.map((row, i) => ({
      row,
      job: {
        notificationId: row.id,
        tenantId: row.tenant_id,
        queuedSeq: Number(row.seq),
        priority: PRIORITIES[row.priority] ?? 'normal',
        attempt: row.attempt,
        possibleDuplicate: row.possible_duplicate,
        channel: { name: row.channel_type, type: row.channel_type, id: row.channel_id, config: configs[i]! },
        message: row.message,
        createdAt: row.created_at.toISOString(),
      },
    }));
  });

/** runs send under the attempt deadline (spec 002: 10 s per attempt); past it the outcome is unknown */
const attemptDeadline = <T>(
  ctx: NotifyContext,
  send: (signal: AbortSignal) => Promise<T>,
  timedOut: (outcome: DeliveryOutcome) => T,
): Promise<T> =>
  withinDeadline(ctx.settings.attemptTimeoutMs, send, () =>
    timedOut(failure(`the attempt did not finish within ${ctx.settings.attemptTimeoutMs / 1000} s`, false, true)),
  );

/** one attempt, bounded by the attempt deadline; a timeout's outcome is unknown */
const attempt = async (ctx: NotifyContext, claimed: Claimed): Promise<DeliveryOutcome> => {
  const adapter = ctx.adapters.get(claimed.job.channel.type);
  if (!adapter) return failure(`no adapter for channel type ${claimed.job.channel.type} is installed`, false);
  return attemptDeadline(
    ctx,
    (signal) => adapter.send(claimed.job, signal).catch((error: unknown) => failure(error, false)),
    (outcome) => outcome,
  );
};

/** the send that queued a notification: its attempts' spans are children of that request's */
const traceOf = (c: Claimed): TracedItem => ({ traceId: c.row.trace_id, spanId: c.row.span_id });
const attributesOf = (channel: string) => ({ 'notify.channel': channel });

/**
 * The attempts of a claimed batch, at once: the share of an adapter that sends many at once (the
 * websocket channel: one buffer insert and one publish) is one call under one deadline; every
 * other notification is its own attempt.
 */
export const attemptAll = async (
  ctx: NotifyContext,
  claimed: readonly Claimed[],
): Promise<{ claimed: Claimed; outcome: DeliveryOutcome }[]> => {
  const together = new Map<ChannelAdapter, Claimed[]>();
  const alone: Claimed[] = [];
  for (const c of claimed) {
    const adapter = ctx.adapters.get(c.job.channel.type);
    if (!adapter?.sendMany) alone.push(c);
    else if (together.has(adapter)) together.get(adapter)!.push(c);
    else together.set(adapter, [c]);
  }
  const outcomes = await Promise.all([
    ...alone.map(async (c) => [
      {
        claimed: c,
        outcome: await continueTrace('notify.deliver', traceOf(c), attributesOf(c.job.channel.type), () =>
          attempt(ctx, c),
        ),
      },
    ]),
    ...[...together].map(async ([adapter, group]) => {
      const results = await continueTraces(
        { batch: 'notify.deliver.batch', each: 'notify.deliver' },
        group,
        traceOf,
        attributesOf(group[0]!.job.channel.type),
        () =>
          attemptDeadline(
            ctx,
            (signal) =>
              adapter.sendMany!(
                group.map((c) => c.job),
                signal,
              ).catch((error: unknown) => group.map(() => failure(error, false))),
            (outcome) => group.map(() => outcome),
          ),
      );
      return group.map((c, i) => ({
        claimed: c,
        outcome: results[i] ?? failure('no outcome for this notification', false),
      }));
    }),
  ]);
  return outcomes.flat();
};

/**
 * Records the outcomes of this worker's attempts in one transaction: delivered rows are deleted
 * (their content with them), failed attempts queued again at their retry time, exhausted ones
 * kept as failed. A row no longer this worker's (reaped while it was slow) is left alone: its
 * next attempt carries the possible-duplicate mark.
 */
export const recordOutcomes = async (
  kernel: Kernel,
  ctx: NotifyContext,
  workerKey: bigint,
  outcomes: { claimed: Claimed; outcome: DeliveryOutcome }[],
): Promise<void> => {
  if (outcomes.length === 0) return;
  await withTransaction(kernel, async (tx) => {
    const now = ctx.clock.now().toISOString();
    const [, owned] = (await tx.query(`BEGIN;
      SELECT d.id, d.tenant_id, d.possible_duplicate, s.version, s.state, s.state_schema FROM notify.deliveries d ${HEAD_JOIN}
       WHERE d.id = ANY(${literal(outcomes.map((o) => o.claimed.row.id))}::uuid[]) AND d.state = 'sending' AND d.claimed_by = ${workerKey.toString()}
       FOR UPDATE OF d`)) as unknown as [unknown, { rows: (HeadColumns & { possible_duplicate: boolean })[] }];
    const rows = new Map(owned.rows.map((r) => [r.id, r]));
    const batch = new NotificationBatch(kernel, tx);
    const delivered: string[] = [];
    const updates: string[] = [];
    for (const { claimed, outcome } of outcomes) {
      const row = rows.get(claimed.row.id);
      if (!row) continue;
      const loaded = await batch.loaded(row);
      if (outcome.ok) {
        batch.decide(row.tenant_id, loaded, {
          type: 'ConfirmDelivery',
          now,
          possibleDuplicate: row.possible_duplicate,
        });
        delivered.push(row.id);
        continue;
      }
      const [event] = batch.decide(row.tenant_id, loaded, {
        type: 'FailAttempt',
        now,
        error: outcome.error,
        permanent: outcome.permanent,
        jitterUnit: ctx.random(),
      });
      const state = event?.type === 'notify.notification.failed' ? 'failed' : 'queued';
      const due =
        event?.type === 'notify.notification.attempt_failed'
          ? new Date(Date.parse(event.data.failedAt) + event.data.retryInMs).toISOString()
          : now;
      updates.push(
        `(${literal(row.id)}::uuid, ${literal(state)}, ${literal(due)}::timestamptz, ${literal(outcome.error)}, ${outcome.unknownOutcome ? 'true' : 'false'})`,
      );
    }
    const statements = batch.statements();
    if (delivered.length)
      statements.push(`DELETE FROM notify.deliveries WHERE id = ANY(${literal(delivered)}::uuid[])`);
    if (updates.length) {
      statements.push(`UPDATE notify.deliveries d SET state = v.state, due_at = v.due, last_error = v.error, possible_duplicate = d.possible_duplicate OR v.unknown,
        claimed_by = NULL, lease_until = NULL FROM (VALUES ${updates.join(', ')}) AS v(id, state, due, error, unknown) WHERE d.id = v.id`);
    }
    await tx.query([...statements, 'COMMIT'].join(';\n'));
  });
};

/**
 * Queues again the notifications whose worker is gone (its session lock is free) or whose lease
 * ran out: the attempt's outcome is unknown, so the next one is marked a possible duplicate
 * (X-Notification-Possible-Duplicate) and made at once. Counted as an attempt, so a message that
 * kills its worker every time ends failed instead of looping. Returns how many were queued again.
 */
export const reapAbandoned = async (kernel: Kernel, ctx: NotifyContext): Promise<number> =>
  withTransaction(kernel, async (tx) => {
    const now = ctx.clock.now();
    const [, found] = (await tx.query(`BEGIN;
    ${pickSql(DELIVERIES, {
      columns: 'd.id, d.tenant_id, s.version, s.state, s.state_schema',
      from: FROM,
      due: `d.state = 'sending' AND ${leaseLapsed('d.claimed_by', 'd.lease_until', literal(now))}`,
      order: 'd.id',
      limit: 200,
      lockOf: 'd',
    })}`)) as unknown as [unknown, { rows: HeadColumns[] }];
    if (found.rows.length === 0) {
      await tx.query('COMMIT');
      return 0;
    }
    const batch = new NotificationBatch(kernel, tx);
    const updates: string[] = [];
    for (const row of found.rows) {
      const [event] = batch.decide(row.tenant_id, await batch.loaded(row), {
        type: 'AbandonAttempt',
        now: now.toISOString(),
        error: 'the worker sending it was lost; outcome unknown',
      });
      updates.push(
        `(${literal(row.id)}::uuid, ${literal(event?.type === 'notify.notification.failed' ? 'failed' : 'queued')})`,
      );
    }
    await tx.query(
      [
        ...batch.statements(),
        `UPDATE notify.deliveries d SET state = v.state, due_at = ${literal(now)}, possible_duplicate = true, claimed_by = NULL, lease_until = NULL,
       last_error = 'the worker sending it was lost; outcome unknown' FROM (VALUES ${updates.join(', ')}) AS v(id, state) WHERE d.id = v.id`,
        'COMMIT',
      ].join(';\n'),
    );
    return found.rows.length;
  });
