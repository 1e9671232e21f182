import { afterFailure, errorText } from '../../domain/events/delivery';
import type { AttemptOutcome } from '../../domain/events/delivery';
import type { EventView } from '../../domain/events/views';
import type { Kernel } from '../../infra/kernel';
import type { Db, Tx } from '../../infra/postgres/db';
import { inTransaction } from '../../infra/postgres/db';
import { Wakeup } from '../../infra/log/support';
import type { Holds } from '../../domain/events/key-lanes';
import { blockedKeys, cursorState } from '../../domain/events/key-lanes';
import { findModule } from '../modules/lookups';
import type { BusSubscriptionRow } from './lookups';
import { signingKeyOf, webhookSecretOf } from '../modules/keys';
import type { EventsContext, InProcessHandler } from './context';
import { writeDeadLetter } from './dead-letters';
import { deliverWebhook } from './webhooks';
import { prepared } from '../../infra/postgres/pipeline';
import { continueTrace } from '../../infra/observability/tracing';

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
  head: string;
  done_seqs: string[];
  holds: Holds;
}
interface RecordRow {
  seq: string;
  log_offset: string;
  event_id: string;
  ts: Date;
  key: string;
  value: string;
  /** the span that appended the event: its deliveries continue that trace */
  span_id: string | null;
}

/**
 * a cursor has work now: events past it, and either no key held back, a retry due, or events the
 * last turn has not read (a held key does not hold back the others)
 */
const READY = `h.next_seq > c.next_seq AND (c.retry_at IS NULL OR c.retry_at <= $1 OR h.next_seq > c.scan_seq)`;

// the statements of every delivery turn, prepared (parsed and planned once per connection)
const WITH_WORK = prepared(
  'bus_subscriptions_with_work',
  `SELECT c.subscription_id, ${READY} AS ready, c.retry_at FROM events.cursors c
     JOIN events.tenant_heads h ON h.topic = c.topic AND h.tenant_id = c.tenant_id AND h.partition = c.partition
    WHERE h.next_seq > c.next_seq`,
);
const READY_CURSORS = prepared(
  'bus_ready_cursors',
  `SELECT c.partition, c.next_seq, c.min_log_offset, c.done_seqs, c.holds, h.next_seq AS head FROM events.cursors c
     JOIN events.tenant_heads h ON h.topic = c.topic AND h.tenant_id = c.tenant_id AND h.partition = c.partition
    WHERE c.subscription_id = $2 AND ${READY}`,
);
const SAVE_CURSOR = prepared(
  'bus_save_cursor',
  `UPDATE events.cursors SET next_seq = $3, done_seqs = $4, holds = $5, scan_seq = $6, retry_at = $7, attempts = $8,
      last_error = $9 WHERE subscription_id = $1 AND partition = $2`,
);
const SAVE_PROCESSED = prepared(
  'bus_save_processed',
  'INSERT INTO events.processed (subscription_id, event_id, ts) SELECT $1, e, t FROM unnest($2::uuid[], $3::timestamptz[]) AS x(e, t) ON CONFLICT DO NOTHING',
);
const READ_RECORDS = prepared(
  'bus_read_records',
  `SELECT seq, log_offset, event_id, ts, key, value, span_id FROM events.records
    WHERE topic = $1 AND tenant_id = $2 AND partition = $3 AND seq >= $4 AND seq <> ALL($5::bigint[]) AND key <> ALL($6::text[])
    ORDER BY seq LIMIT $7`,
);

/** the subscriptions that have events to deliver now (and the next time a waiting retry is due) */
export const subscriptionsWithWork = async (
  kernel: Kernel,
  limit: number,
): Promise<{ ids: string[]; nextRetryAt: Date | null }> => {
  const now = kernel.clock.now();
  const { rows } = await kernel.db.query<{ subscription_id: string; ready: boolean; retry_at: Date | null }>(
    WITH_WORK([now]),
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

/** how long a turn reads new events (past it, only while a handler is still busy), and when it stops reading at all */
const TURN_MS = 1000;
const TURN_MAX_MS = 10_000;
/** how often a turn writes its progress while it runs (and always at its end) */
const CHECKPOINT_MS = 100;

/** what wakes a running turn when the fan-out copied new records (the worker's LISTEN) */
export interface Arrivals {
  subscribe(listener: () => void): () => void;
}

/**
 * One turn of a subscription, while the caller holds its lock: each partition with work gets its
 * events, up to EVENTS_KEY_CONCURRENCY entity keys at once across the subscription's partitions, each
 * key's events in order (deliverPartition). Returns how many events it passed (delivered,
 * dead-lettered or skipped).
 */
export const deliverTurn = async (
  kernel: Kernel,
  ctx: EventsContext,
  sub: BusSubscriptionRow,
  target: Target,
  arrivals?: Arrivals,
): Promise<number> => {
  const { rows } = await kernel.db.query<CursorRow>(READY_CURSORS([kernel.clock.now(), sub.id]));
  if (rows.length === 0) return 0;
  const started = Date.now();
  const turn: Turn = {
    soft: started + TURN_MS,
    hard: started + TURN_MAX_MS,
    slots: new Slots(ctx.settings.keyConcurrency),
    arrivals,
  };
  const handled = await Promise.all(rows.map((cursor) => deliverPartition(kernel, ctx, sub, target, cursor, turn)));
  return handled.reduce((a, b) => a + b, 0);
};

interface Turn {
  soft: number;
  hard: number;
  slots: Slots;
  arrivals: Arrivals | undefined;
}

/** at most n lanes hand events over at once */
class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];
  constructor(n: number) {
    this.free = n;
  }
  async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free -= 1;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free += 1;
  }
}

/**
 * A partition's share of a turn. Its events are read in order and queued per entity key; a lane per
 * key hands them over one after another (a lane holds a slot of the turn while it runs). A failed
 * attempt holds back its key — the lane stops, the key's later events wait behind it until the retry
 * is due — while other keys go on; the third failure dead-letters the event and the key goes on.
 * The turn reads new events as the fan-out announces them for TURN_MS, longer while a lane is still
 * busy (a slow key does not stall the others; at most TURN_MAX_MS). Progress is written every
 * CHECKPOINT_MS and at the end: the cursor moves to the first event not finished (domain/events/key-lanes.ts).
 */
const deliverPartition = async (
  kernel: Kernel,
  ctx: EventsContext,
  sub: BusSubscriptionRow,
  target: Target,
  cursor: CursorRow,
  turn: Turn,
): Promise<number> => {
  const partition = cursor.partition;
  const minLogOffset = Number(cursor.min_log_offset);
  const from = Number(cursor.next_seq);
  const holds: Holds = { ...cursor.holds };
  /** finished events at or after `from` (those of earlier turns too) */
  const finished = new Set<number>(cursor.done_seqs.map(Number));
  /** read and not finished, by seq */
  const pending = new Map<number, RecordRow>();
  /** keys held back in this turn: nothing more of theirs is handed over before the next */
  const heldNow = new Set<string>();
  const queues = new Map<string, RecordRow[]>();
  const lanes = new Set<string>();
  /** dedup webhook subscriptions: delivered event ids to remember as processed with the next write */
  const processed: { eventId: string; ts: Date }[] = [];
  let frontier = from;
  let handled = 0;
  let firstRead = true;
  let writes: Promise<void> = Promise.resolve();
  let lastWrite = Date.now();
  let dirty = false;

  const wakeup = new Wakeup();

  const state = () =>
    cursorState({ pending: pending.keys(), holds, frontier, finished: [...finished].filter((s) => s >= from) });

  /** writes the cursor as it stands (one write at a time, in order); a dead letter writes in the same transaction */
  const write = (before?: (tx: Tx) => Promise<void>): Promise<void> => {
    const run = async () => {
      dirty = false;
      lastWrite = Date.now();
      const save = async (tx: Tx | Db) => {
        const s = state();
        const oldest = Object.values(holds).sort((a, b) => a.seq - b.seq)[0];
        await tx.query(
          SAVE_CURSOR([
            sub.id,
            partition,
            s.nextSeq,
            s.doneSeqs,
            JSON.stringify(holds),
            s.scanSeq,
            s.retryAt === null ? null : new Date(s.retryAt),
            // the summary of earlier versions: the oldest held event's failed attempts and error
            oldest?.attempts ?? 0,
            oldest?.error ?? null,
          ]),
        );
        const done = processed.splice(0);
        if (done.length) await tx.query(SAVE_PROCESSED([sub.id, done.map((d) => d.eventId), done.map((d) => d.ts)]));
      };
      if (before) await inTransaction(kernel.db, async (tx) => (await before(tx), await save(tx)));
      else await save(kernel.db);
    };
    const next = writes.then(run);
    writes = next.catch(() => undefined);
    return next;
  };

  const finish = (record: RecordRow) => {
    const seq = Number(record.seq);
    finished.add(seq);
    pending.delete(seq);
    handled += 1;
    dirty = true;
  };

  /** one key's queued events, in order, until the queue is empty, the key is held back or the turn is over */
  const lane = async (key: string) => {
    await turn.slots.acquire();
    try {
      const queue = queues.get(key)!;
      while (queue.length && Date.now() < turn.hard) {
        const record = queue.shift()!;
        const seq = Number(record.seq);
        if (Number(record.log_offset) < minLogOffset) {
          finish(record);
          continue;
        }
        const hold = holds[key];
        // failed attempts so far: only the event its key is held at has any
        const attempts = hold && hold.seq === seq ? hold.attempts : 0;
        const event = JSON.parse(record.value) as EventView;
        const traced = { traceId: event.traceId, spanId: record.span_id };
        const attributes = { 'bus.subscription': sub.id, 'bus.delivery': target.kind, 'bus.attempt': attempts + 1 };
        const outcome = await continueTrace('bus.deliver', traced, attributes, () =>
          sub.dedup && target.kind === 'in-process'
            ? exactlyOnce(kernel, sub, target.handler, event, record, attempts + 1)
            : attemptDelivery(kernel, ctx, sub, target, event, attempts + 1),
        );
        if (outcome.ok) {
          delete holds[key];
          if (sub.dedup && target.kind === 'webhook') processed.push({ eventId: record.event_id, ts: record.ts });
          finish(record);
          continue;
        }
        const decision = afterFailure(attempts, ctx.settings.retryBackoffMs);
        if (decision.kind === 'retry') {
          holds[key] = {
            seq,
            attempts: decision.attempts,
            retryAt: kernel.clock.now().getTime() + decision.delayMs,
            error: outcome.error,
          };
          heldNow.add(key);
          // the key's later events wait behind this one: they are read again after the retry
          for (const r of [record, ...queue.splice(0)]) pending.delete(Number(r.seq));
          dirty = true;
          return;
        }
        const at = kernel.clock.now();
        delete holds[key];
        finish(record);
        // the dead letter and the cursor that passed it are written together
        await write((tx) =>
          writeDeadLetter(tx, {
            id: kernel.ids.next(),
            sub,
            partition,
            seq,
            event,
            eventText: record.value,
            key: record.key,
            failureCount: decision.failureCount,
            lastError: outcome.error,
            at,
          }),
        ).catch((error: unknown) => {
          finished.delete(seq);
          pending.set(seq, record);
          throw error;
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
      }
    } finally {
      turn.slots.release();
      lanes.delete(key);
      wakeup.signal();
    }
  };

  const laneErrors: unknown[] = [];
  const read = async (): Promise<number> => {
    const now = kernel.clock.now().getTime();
    const blocked = [...new Set([...blockedKeys(holds, now), ...heldNow])];
    const { rows: records } = await kernel.db.query<RecordRow>(
      READ_RECORDS([
        sub.topic,
        sub.tenant_id,
        partition,
        frontier,
        [...finished].filter((s) => s >= frontier),
        blocked,
        ctx.settings.deliveryBatch,
      ]),
    );
    if (firstRead) {
      firstRead = false;
      // a due retry whose event retention took: the key is held back no more
      const reachedEnd = records.length < ctx.settings.deliveryBatch;
      const maxRead = records.length ? Number(records[records.length - 1]!.seq) : -1;
      for (const [key, hold] of Object.entries(holds))
        if (
          hold.retryAt <= now &&
          (reachedEnd || hold.seq <= maxRead) &&
          !records.some((r) => Number(r.seq) === hold.seq)
        )
          delete holds[key];
      if (records.length === 0 && Object.keys(holds).length === 0 && Number(cursor.head) > frontier) {
        // retention took them: the partition resumes at its first record still kept
        frontier = Number(cursor.head);
        dirty = true;
        return 0;
      }
    }
    if (records.length) frontier = Number(records[records.length - 1]!.seq) + 1;
    // fewer than asked: every earlier event not read is finished or of a key held back
    if (records.length < ctx.settings.deliveryBatch) frontier = Math.max(frontier, Number(cursor.head));
    const seen = sub.dedup
      ? await processedAmong(
          kernel,
          sub.id,
          records.map((r) => r.event_id),
        )
      : new Set<string>();
    let queued = 0;
    for (const record of records) {
      if (heldNow.has(record.key)) continue;
      pending.set(Number(record.seq), record);
      if (seen.has(record.event_id)) {
        finish(record);
        continue;
      }
      const queue = queues.get(record.key) ?? [];
      queues.set(record.key, queue);
      queue.push(record);
      queued += 1;
      if (!lanes.has(record.key)) {
        lanes.add(record.key);
        lane(record.key).catch((error: unknown) => {
          // the key stops here for this turn: its unfinished events stay pending, so the cursor does not pass them
          laneErrors.push(error);
          heldNow.add(record.key);
          queues.get(record.key)?.splice(0);
        });
      }
    }
    return queued;
  };

  /** new records announced (or none read yet): the next pass reads */
  let arrived = true;
  let lastRead = 0;
  const unsubscribe = turn.arrivals?.subscribe(() => {
    arrived = true;
    wakeup.signal();
  });
  try {
    for (;;) {
      const now = Date.now();
      const reading = now < turn.hard && (now < turn.soft || lanes.size > 0);
      // read when told of new records, when every lane is idle (to see whether the turn is over), or on the poll interval
      const due = arrived || lanes.size === 0 || now - lastRead >= ctx.settings.pollIntervalMs;
      let queued = -1;
      if (reading && due) {
        arrived = false;
        lastRead = now;
        queued = await read();
      }
      if (lanes.size === 0 && (!reading || queued === 0)) break;
      if (dirty && Date.now() - lastWrite >= CHECKPOINT_MS) await write();
      await wakeup.wait(Math.min(ctx.settings.pollIntervalMs, CHECKPOINT_MS));
    }
  } finally {
    unsubscribe?.();
  }
  // a lane still running (the loop left on an error) finishes before the last write
  while (lanes.size) await wakeup.wait(CHECKPOINT_MS);
  await write();
  if (laneErrors.length) throw laneErrors[0];
  return handled;
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
