import { afterFailure, errorText } from '../../domain/events/delivery';
import type { AttemptOutcome } from '../../domain/events/delivery';
import type { EventView } from '../../domain/events/views';
import type { Kernel } from '../../infra/kernel';
import { inTransaction } from '../../infra/postgres/db';
import { findModule } from '../modules/lookups';
import type { BusSubscriptionRow } from './lookups';
import { signingKeyOf, webhookSecretOf } from '../modules/keys';
import type { EventsContext, InProcessHandler } from './context';
import { writeDeadLetter } from './dead-letters';
import { deliverWebhook } from './webhooks';

/** how a subscription's events reach its handler, resolved once per turn */
export type Target =
  | { kind: 'webhook'; endpoint: string; secret: string | null; keyId: string | null }
  | { kind: 'in-process'; handler: InProcessHandler };

/** null: this process cannot deliver for the subscription (no such in-process handler here, module gone) */
export const targetOf = async (kernel: Kernel, ctx: EventsContext, sub: BusSubscriptionRow): Promise<Target | null> => {
  if (sub.delivery === 'in-process') {
    const handler = ctx.handlers.get(sub.handler_name);
    return handler ? { kind: 'in-process', handler } : null;
  }
  const module = await findModule(kernel.db, sub.source);
  const endpoint = module?.slug === sub.source ? module.manifest.events.endpoint : undefined;
  if (!module || !endpoint) return null;
  const keyId = await signingKeyOf(kernel.db, module.id);
  return { kind: 'webhook', endpoint, keyId, secret: keyId ? webhookSecretOf(kernel, keyId) : null };
};

/** one attempt to hand an event to the subscription's handler */
export const attemptDelivery = async (
  kernel: Kernel,
  ctx: EventsContext,
  sub: BusSubscriptionRow,
  target: Target,
  event: EventView,
  attempt: number,
): Promise<AttemptOutcome> => {
  if (target.kind === 'webhook') {
    return deliverWebhook(
      ctx.post,
      {
        endpoint: target.endpoint,
        secret: target.secret,
        keyId: target.keyId,
        subscriptionId: sub.id,
        consumerGroup: sub.consumer_group,
        handlerName: sub.handler_name,
        attempt,
        event,
      },
      kernel.clock.now().getTime(),
      ctx.settings.webhookTimeoutMs,
    );
  }
  try {
    await target.handler(event, {
      subscriptionId: sub.id,
      tenantId: sub.tenant_id,
      consumerGroup: sub.consumer_group,
      attempt,
      tx: null,
    });
    return { ok: true };
  } catch (error) {
    return { ok: false, error: errorText(error instanceof Error ? error.message : String(error)) };
  }
};

interface CursorRow {
  partition: number;
  next_seq: string;
  min_log_offset: string;
  attempts: number;
  head: string;
}
interface RecordRow {
  seq: string;
  log_offset: string;
  event_id: string;
  ts: Date;
  key: string;
  value: string;
}

/** the subscriptions that have events to deliver now (and the next time a waiting retry is due) */
export const subscriptionsWithWork = async (
  kernel: Kernel,
  limit: number,
): Promise<{ ids: string[]; nextRetryAt: Date | null }> => {
  const now = kernel.clock.now();
  const { rows } = await kernel.db.query<{ subscription_id: string; ready: boolean; retry_at: Date | null }>(
    `SELECT c.subscription_id, (c.retry_at IS NULL OR c.retry_at <= $1) AS ready, c.retry_at FROM events.cursors c
       JOIN events.tenant_heads h ON h.topic = c.topic AND h.tenant_id = c.tenant_id AND h.partition = c.partition
      WHERE h.next_seq > c.next_seq`,
    [now],
  );
  const ready = [...new Set(rows.filter((r) => r.ready).map((r) => r.subscription_id))];
  const waiting = rows.filter((r) => !r.ready && r.retry_at).map((r) => r.retry_at!.getTime());
  // shuffled: several workers pick different subscriptions first
  for (let i = ready.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [ready[i], ready[j]] = [ready[j]!, ready[i]!];
  }
  return { ids: ready.slice(0, limit), nextRetryAt: waiting.length ? new Date(Math.min(...waiting)) : null };
};

/**
 * One turn of a subscription, while the caller holds its lock: each partition with work gets its
 * events in order (partitions in parallel), until the batch or the time budget is spent. A failed
 * attempt holds the partition back until its retry is due; the third sends the event to the DLQ and
 * the partition goes on. Returns how many events it passed (delivered, dead-lettered or skipped).
 */
export const deliverTurn = async (
  kernel: Kernel,
  ctx: EventsContext,
  sub: BusSubscriptionRow,
  target: Target,
): Promise<number> => {
  const { rows } = await kernel.db.query<CursorRow>(
    `SELECT c.partition, c.next_seq, c.min_log_offset, c.attempts, h.next_seq AS head FROM events.cursors c
       JOIN events.tenant_heads h ON h.topic = c.topic AND h.tenant_id = c.tenant_id AND h.partition = c.partition
      WHERE c.subscription_id = $1 AND h.next_seq > c.next_seq AND (c.retry_at IS NULL OR c.retry_at <= $2)`,
    [sub.id, kernel.clock.now()],
  );
  const deadline = Date.now() + 1000;
  const handled = await Promise.all(rows.map((cursor) => deliverPartition(kernel, ctx, sub, target, cursor, deadline)));
  return handled.reduce((a, b) => a + b, 0);
};

const deliverPartition = async (
  kernel: Kernel,
  ctx: EventsContext,
  sub: BusSubscriptionRow,
  target: Target,
  cursor: CursorRow,
  deadline: number,
): Promise<number> => {
  const { rows: records } = await kernel.db.query<RecordRow>(
    `SELECT seq, log_offset, event_id, ts, key, value FROM events.records WHERE topic = $1 AND tenant_id = $2 AND partition = $3 AND seq >= $4 ORDER BY seq LIMIT $5`,
    [sub.topic, sub.tenant_id, cursor.partition, cursor.next_seq, ctx.settings.deliveryBatch],
  );
  if (records.length === 0) {
    // retention took them: the partition resumes at its first record still kept
    await kernel.db.query(
      `UPDATE events.cursors SET next_seq = greatest(next_seq, $3), attempts = 0, retry_at = NULL WHERE subscription_id = $1 AND partition = $2`,
      [sub.id, cursor.partition, cursor.head],
    );
    return 0;
  }
  const seen = sub.dedup
    ? await processedAmong(
        kernel,
        sub.id,
        records.map((r) => r.event_id),
      )
    : new Set<string>();
  let next = Number(records[0]!.seq);
  const done: { eventId: string; ts: Date }[] = [];
  let handled = 0;
  for (const record of records) {
    if (Date.now() > deadline) break;
    const seq = Number(record.seq);
    handled += 1;
    if (Number(record.log_offset) < Number(cursor.min_log_offset) || seen.has(record.event_id)) {
      next = seq + 1;
      continue;
    }
    // failed attempts so far: only the event the cursor stopped at has any
    const attempts = seq === Number(cursor.next_seq) ? cursor.attempts : 0;
    const event = JSON.parse(record.value) as EventView;
    const outcome =
      sub.dedup && target.kind === 'in-process'
        ? await exactlyOnce(kernel, sub, target.handler, event, record, attempts + 1)
        : await attemptDelivery(kernel, ctx, sub, target, event, attempts + 1);
    if (outcome.ok) {
      next = seq + 1;
      if (sub.dedup && target.kind === 'webhook') done.push({ eventId: record.event_id, ts: record.ts });
      continue;
    }
    const decision = afterFailure(attempts, ctx.settings.retryBackoffMs);
    if (decision.kind === 'retry') {
      await saveCursor(kernel, sub.id, cursor.partition, seq, done, {
        attempts: decision.attempts,
        error: outcome.error,
        retryAt: new Date(kernel.clock.now().getTime() + decision.delayMs),
      });
      return handled;
    }
    const at = kernel.clock.now();
    await inTransaction(kernel.db, async (tx) => {
      await writeDeadLetter(tx, {
        id: kernel.ids.next(),
        sub,
        partition: cursor.partition,
        seq,
        event,
        eventText: record.value,
        key: record.key,
        failureCount: decision.failureCount,
        lastError: outcome.error,
        at,
      });
      await saveCursor(kernel, sub.id, cursor.partition, seq + 1, done.splice(0), null, tx);
    });
    kernel.logger.warn(
      {
        subscriptionId: sub.id,
        tenantId: sub.tenant_id,
        eventId: event.eventId,
        failures: decision.failureCount,
        error: outcome.error,
        ...(outcome.detail ? { detail: outcome.detail } : {}),
      },
      'event dead-lettered',
    );
    next = seq + 1;
  }
  await saveCursor(kernel, sub.id, cursor.partition, next, done, null);
  return handled;
};

/** moves a cursor (never backwards) and remembers what a deduplicating webhook subscription processed, together */
const saveCursor = async (
  kernel: Kernel,
  subscriptionId: string,
  partition: number,
  nextSeq: number,
  done: { eventId: string; ts: Date }[],
  failure: { attempts: number; error: string; retryAt: Date } | null,
  tx: { query: Kernel['db']['query'] } = kernel.db,
): Promise<void> => {
  const statements: { text: string; values: unknown[] }[] = [
    failure
      ? {
          text: 'UPDATE events.cursors SET next_seq = greatest(next_seq, $3), attempts = $4, last_error = $5, retry_at = $6 WHERE subscription_id = $1 AND partition = $2',
          values: [subscriptionId, partition, nextSeq, failure.attempts, failure.error, failure.retryAt],
        }
      : {
          text: 'UPDATE events.cursors SET next_seq = greatest(next_seq, $3), attempts = 0, last_error = NULL, retry_at = NULL WHERE subscription_id = $1 AND partition = $2',
          values: [subscriptionId, partition, nextSeq],
        },
  ];
  if (done.length) {
    statements.push({
      text: 'INSERT INTO events.processed (subscription_id, event_id, ts) SELECT $1, e, t FROM unnest($2::uuid[], $3::timestamptz[]) AS x(e, t) ON CONFLICT DO NOTHING',
      values: [subscriptionId, done.map((d) => d.eventId), done.map((d) => d.ts)],
    });
  }
  for (const s of statements) await tx.query(s.text, s.values);
};

const processedAmong = async (kernel: Kernel, subscriptionId: string, eventIds: string[]): Promise<Set<string>> =>
  new Set(
    (
      await kernel.db.query<{ event_id: string }>(
        'SELECT event_id FROM events.processed WHERE subscription_id = $1 AND event_id = ANY($2::uuid[])',
        [subscriptionId, eventIds],
      )
    ).rows.map((r) => r.event_id),
  );

/**
 * A deduplicating in-process handler runs inside the transaction that records the event as
 * processed: its own writes through ctx.tx commit exactly when the event counts as processed, so a
 * redelivery (a crash before the cursor moved, a rebalance, a relay duplicate) changes nothing.
 */
const exactlyOnce = async (
  kernel: Kernel,
  sub: BusSubscriptionRow,
  handler: InProcessHandler,
  event: EventView,
  record: RecordRow,
  attempt: number,
): Promise<AttemptOutcome> => {
  try {
    await inTransaction(kernel.db, async (tx) => {
      const { rowCount } = await tx.query(
        'INSERT INTO events.processed (subscription_id, event_id, ts) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
        [sub.id, record.event_id, record.ts],
      );
      if (rowCount)
        await handler(event, {
          subscriptionId: sub.id,
          tenantId: sub.tenant_id,
          consumerGroup: sub.consumer_group,
          attempt,
          tx,
        });
    });
    return { ok: true };
  } catch (error) {
    return { ok: false, error: errorText(error instanceof Error ? error.message : String(error)) };
  }
};
