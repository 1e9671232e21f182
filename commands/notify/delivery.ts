import { PRIORITIES } from '../../domain/notify/priority';
import type { RateWindow } from '../../domain/notify/rate';
import { admit, rateScopes } from '../../domain/notify/rate';
import type { Kernel } from '../../infra/kernel';
import { literal } from '../../infra/postgres/inline';
import type { Tx } from '../../infra/postgres/db';
import type { ChannelAdapter, DeliveryJob, DeliveryMessage, DeliveryOutcome } from './channels/adapter';
import { failure } from './channels/adapter';
import { channelConfig } from './channel-config';
import type { NotifyContext } from './context';
import type { HeadColumns } from './event-batch';
import { HEAD_JOIN, NotificationBatch } from './event-batch';
import { workerIsLive } from './worker-session';

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
 * Claims due notifications, critical first, then by due time: SELECT … FOR UPDATE SKIP LOCKED, so
 * several workers share the queue without waiting on each other. A tenant (or module) whose
 * one-minute window is used up is skipped: its messages stay queued until the window ends
 * (delayed, never dropped). The claimed rows are marked sending with this worker's key and a
 * lease, the attempts' events recorded, and the transaction committed before anything is sent.
 */
export const claim = async (kernel: Kernel, ctx: NotifyContext, workerKey: bigint): Promise<Claimed[]> =>
  withTransaction(kernel, async (tx) => {
    const now = ctx.clock.now();
    const { settings } = ctx;
    const exhausted = (scope: string, limit: number) =>
      `EXISTS (SELECT 1 FROM notify.rate_windows w WHERE w.scope = ${scope} AND w.window_start > ${literal(new Date(now.getTime() - 60_000))} AND w.used >= ${limit})`;
    const [, found] = (await tx.query(`BEGIN;
    SELECT d.id, d.seq, d.tenant_id, d.module, d.rate_limited, d.channel_type, d.channel_id, d.priority, d.attempt, d.possible_duplicate, d.message, d.created_at,
           s.version, s.state, s.state_schema
      FROM notify.deliveries d ${HEAD_JOIN}
     WHERE d.state = 'queued' AND d.due_at <= ${literal(now)}
       AND NOT (d.rate_limited AND ${exhausted(`'t:' || d.tenant_id`, settings.ratePerTenant)})
       AND NOT (d.rate_limited AND d.module IS NOT NULL AND ${exhausted(`'m:' || d.tenant_id || ':' || d.module`, settings.ratePerModule)})
     ORDER BY d.priority DESC, d.due_at, d.seq
     LIMIT ${settings.workerBatch}
     FOR UPDATE OF d SKIP LOCKED`)) as unknown as [unknown, { rows: QueueRow[] }];
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
    const keys = [...new Set(scoped.flatMap((c) => c.scopes.map((s) => s.key)))].sort();
    const windows = new Map<string, RateWindow>();
    if (keys.length) {
      // the rows exist before they are locked, so two claimers serialize on them instead of both inserting
      const [, locked] =
        (await tx.query(`INSERT INTO notify.rate_windows (scope, window_start, used) SELECT k, 'epoch', 0 FROM unnest(${literal(keys)}::text[]) k ON CONFLICT DO NOTHING;
      SELECT scope, window_start, used FROM notify.rate_windows WHERE scope = ANY(${literal(keys)}::text[]) ORDER BY scope FOR UPDATE`)) as unknown as [
          unknown,
          { rows: { scope: string; window_start: Date; used: number }[] },
        ];
      for (const w of locked.rows) windows.set(w.scope, { start: w.window_start.getTime(), used: w.used });
    }
    const decision = admit(scoped, windows, now.getTime());
    const admitted = new Set(decision.admitted);
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
    if (decision.windows.size) {
      const values = [...decision.windows]
        .map(([scope, w]) => `(${literal(scope)}, ${literal(new Date(w.start))}, ${w.used})`)
        .join(', ');
      statements.push(
        `UPDATE notify.rate_windows r SET window_start = v.start, used = v.used FROM (VALUES ${values}) AS v(scope, start, used) WHERE r.scope = v.scope`,
      );
    }
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
const withinDeadline = async <T>(
  ctx: NotifyContext,
  send: (signal: AbortSignal) => Promise<T>,
  timedOut: (outcome: DeliveryOutcome) => T,
): Promise<T> => {
  const aborter = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<T>((resolve) => {
    timer = setTimeout(() => {
      aborter.abort();
      resolve(
        timedOut(failure(`the attempt did not finish within ${ctx.settings.attemptTimeoutMs / 1000} s`, false, true)),
      );
    }, ctx.settings.attemptTimeoutMs);
  });
  try {
    return await Promise.race([send(aborter.signal), deadline]);
  } finally {
    clearTimeout(timer);
  }
};

/** one attempt, bounded by the attempt deadline; a timeout's outcome is unknown */
const attempt = async (ctx: NotifyContext, claimed: Claimed): Promise<DeliveryOutcome> => {
  const adapter = ctx.adapters.get(claimed.job.channel.type);
  if (!adapter) return failure(`no adapter for channel type ${claimed.job.channel.type} is installed`, false);
  return withinDeadline(
    ctx,
    (signal) => adapter.send(claimed.job, signal).catch((error: unknown) => failure(error, false)),
    (outcome) => outcome,
  );
};

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
    ...alone.map(async (c) => [{ claimed: c, outcome: await attempt(ctx, c) }]),
    ...[...together].map(async ([adapter, group]) => {
      const results = await withinDeadline(
        ctx,
        (signal) =>
          adapter.sendMany!(
            group.map((c) => c.job),
            signal,
          ).catch((error: unknown) => group.map(() => failure(error, false))),
        (outcome) => group.map(() => outcome),
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
    SELECT d.id, d.tenant_id, s.version, s.state, s.state_schema FROM notify.deliveries d ${HEAD_JOIN}
     WHERE d.state = 'sending' AND (d.lease_until <= ${literal(now)} OR d.claimed_by IS NULL OR NOT ${workerIsLive('d.claimed_by')})
     ORDER BY d.id LIMIT 200 FOR UPDATE OF d SKIP LOCKED`)) as unknown as [unknown, { rows: HeadColumns[] }];
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
