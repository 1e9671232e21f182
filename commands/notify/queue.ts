import { priorityRank } from '../../domain/notify/priority';
import { notifyErrors } from '../../domain/notify/errors';
import type { AcceptedView } from '../../domain/notify/views';
import type { AppendRequest, CausationMeta } from '../../infra/eventstore/event-store';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import type { Kernel } from '../../infra/kernel';
import { literal } from '../../infra/postgres/inline';
import { pipelined, statement } from '../../infra/postgres/pipeline';
import type { Queryable } from '../../infra/postgres/db';
import type { WindowRow } from '../../infra/queue';
import { lockWindowsSql, wakeSql, windowKeys as windowKeysOf } from '../../infra/queue';
import type { SocketEnvelope } from '../../projections/notify/shared/socket-bus';
import { socketBus } from '../../projections/notify/shared/socket-bus';
import { bufferInsert, envelopesOf } from './channels/websocket';
import { chooseLive, liveAppend, liveCandidates, liveEntries, mayGoLive, RATE_WINDOWS } from './live';
import { fold } from '../../domain/shared/decider';
import { notificationDecider } from '../../domain/notify/notification';
import type { NotificationEvent } from '../../domain/notify/events';
import { NotificationAggregate, notificationStream } from './aggregates';
import type { PreparedNotification } from './compose';
import { queuedData } from './compose';
import { notifyContext } from './context';

/** new work for the delivery workers: every worker process LISTENs here and wakes at once */
export const QUEUE_CHANNEL = 'notify_queue';
const WAKE_SQL = wakeSql(QUEUE_CHANNEL);

export const accepted = (p: PreparedNotification): AcceptedView => ({
  notificationId: p.id,
  status: 'queued',
  channel: p.channel.name,
  createdAt: p.createdAt,
});

/** the queue rows of new notifications, one statement with arrays (bodies can be large: bound, not inlined) */
export const insertDeliveries = (prepared: readonly PreparedNotification[]) => ({
  text: `INSERT INTO notify.deliveries (id, tenant_id, module, rate_limited, channel_type, channel_id, priority, state, due_at, message, created_at)
    SELECT id, tenant_id, module, rate_limited, channel_type, channel_id, priority, 'queued', created_at, message::jsonb, created_at
    FROM unnest($1::uuid[], $2::text[], $3::text[], $4::boolean[], $5::text[], $6::text[], $7::smallint[], $8::text[], $9::timestamptz[])
      AS v(id, tenant_id, module, rate_limited, channel_type, channel_id, priority, message, created_at)`,
  values: [
    prepared.map((p) => p.id),
    prepared.map((p) => p.tenantId),
    prepared.map((p) => p.module),
    prepared.map((p) => p.rateLimited),
    prepared.map((p) => p.channel.type),
    prepared.map((p) => p.channel.id),
    prepared.map((p) => priorityRank(p.priority)),
    prepared.map((p) => JSON.stringify(p.message)),
    prepared.map((p) => p.createdAt),
  ],
});

/** serializes the accepts of one tenant while its queue is counted and filled (the cap is exact) */
const lockTenantSql = (tenantId: string) =>
  `SELECT pg_advisory_xact_lock(hashtextextended(${literal(`notify.queue:${tenantId}`)}, 0))`;

/** notifications of each tenant not delivered yet (counted up to max + 1: enough to refuse) */
const pendingSql = (tenantIds: readonly string[], max: number) =>
  `SELECT t AS tenant_id, (SELECT count(*) FROM (SELECT 1 FROM notify.deliveries d WHERE d.tenant_id = t AND d.state <> 'failed' LIMIT ${max + 1}) x)::int AS n
   FROM unnest(${literal([...tenantIds])}::text[]) AS t`;

const limitedCount = (prepared: readonly PreparedNotification[]) => prepared.filter((p) => p.rateLimited).length;

export const pendingCount = async (q: Queryable, tenantId: string, max: number): Promise<number> =>
  (await q.query<{ n: number }>(pendingSql([tenantId], max))).rows[0]?.n ?? 0;

/**
 * Queues notifications of one tenant inside a command's unit of work (a request with an
 * Idempotency-Key, a retry): the cap checked under the tenant's lock, the queued events recorded,
 * the queue rows written; committed by the caller with the events and the idempotency record.
 */
export const queueInUnit = async (
  kernel: Kernel,
  uow: UnitOfWork,
  prepared: readonly PreparedNotification[],
): Promise<AcceptedView[]> => {
  const max = notifyContext(kernel).settings.queueMaxPerTenant;
  const limited = limitedCount(prepared);
  if (limited > 0) {
    await uow.tx.query(lockTenantSql(uow.meta.tenantId));
    if ((await pendingCount(uow.tx, uow.meta.tenantId, max)) + limited > max) throw notifyErrors.queueFull(max);
  }
  for (const p of prepared) {
    uow.decide(
      NotificationAggregate,
      { streamId: notificationStream(p.tenantId, p.id), state: notificationDecider.initialState(), version: 0 },
      { type: 'Queue', data: queuedData(p) },
    );
  }
  if (prepared.length) {
    await uow.tx.query(insertDeliveries(prepared));
    await uow.tx.query(WAKE_SQL);
  }
  return prepared.map(accepted);
};

export const queueCapSql = { lockTenantSql, pendingSql, WAKE_SQL };

interface Waiting {
  meta: CausationMeta;
  prepared: PreparedNotification[];
  resolve: (accepted: AcceptedView[]) => void;
  reject: (error: unknown) => void;
}

/** notifications one accept transaction takes at most (a batch request of 500 goes alone) */
const BATCH_NOTIFICATIONS = 500;
const BATCHES_IN_FLIGHT = 2;

const queuedAppend = (p: PreparedNotification): AppendRequest => {
  const events: NotificationEvent[] = [{ type: 'notify.notification.queued', data: queuedData(p) }];
  return {
    streamId: notificationStream(p.tenantId, p.id),
    expectedVersion: 0,
    events,
    state: { value: fold(notificationDecider, events), schema: NotificationAggregate.stateSchema },
  };
};

/**
 * Group commit of accepts (no Idempotency-Key): requests arriving while earlier ones are being
 * written share one transaction of three round trips — (1) BEGIN, each tenant's lock, each
 * tenant's pending count, the rate windows of websocket notifications; (2) the queue rows and the
 * buffer rows of the websocket notifications delivered at once (commands/notify/live.ts); (3) the
 * events, their inline projection rows, the windows, the live messages' publish (PostgreSQL: sent
 * at commit), the workers' wake-up and COMMIT. A request that would overflow its tenant's queue is
 * refused alone (503 queue-full); a failure of the transaction fails every request in it (nothing
 * of any of them is written, nothing published).
 */
export class Acceptor {
  private readonly waiting: Waiting[] = [];
  private inFlight = 0;

  constructor(private readonly kernel: Kernel) {}

  submit(meta: CausationMeta, prepared: PreparedNotification[]): Promise<AcceptedView[]> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ meta, prepared, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < BATCHES_IN_FLIGHT && this.waiting.length) {
      const batch: Waiting[] = [];
      let size = 0;
      while (
        this.waiting.length &&
        (batch.length === 0 || size + this.waiting[0]!.prepared.length <= BATCH_NOTIFICATIONS)
      ) {
        const next = this.waiting.shift()!;
        size += next.prepared.length;
        batch.push(next);
      }
      this.inFlight += 1;
      void this.run(batch).finally(() => {
        this.inFlight -= 1;
        this.pump();
      });
    }
  }

  private async run(batch: Waiting[]): Promise<void> {
    const { db, store, projections } = this.kernel;
    const { settings } = notifyContext(this.kernel);
    const max = settings.queueMaxPerTenant;
    const limits = { perTenant: settings.ratePerTenant, perModule: settings.ratePerModule };
    const all = batch.flatMap((w) => w.prepared);
    const windowKeys = liveWindowKeys(all, limits);
    // the tenants counted: those with a cap, and those whose websocket notifications may go live
    const tenants = [
      ...new Set(
        batch.filter((w) => limitedCount(w.prepared) > 0 || w.prepared.some(mayGoLive)).map((w) => w.meta.tenantId),
      ),
    ].sort();
    const client = await db.connect().catch((error: unknown) => {
      for (const w of batch) w.reject(error);
      return null;
    });
    if (!client) return;
    let published: SocketEnvelope[] = [];
    try {
      const results = (await client.query(
        [
          'BEGIN',
          ...tenants.map(lockTenantSql),
          ...(tenants.length ? [pendingSql(tenants, max)] : []),
          ...(windowKeys.length ? [lockWindowsSql(RATE_WINDOWS, windowKeys)] : []),
        ].join(';\n'),
      )) as unknown as { rows: unknown[] }[];
      const windows = windowKeys.length ? (results.at(-1)!.rows as WindowRow[]) : [];
      const counted = tenants.length ? results.at(windowKeys.length ? -3 : -1)!.rows : [];
      const pendingBefore = new Map((counted as { tenant_id: string; n: number }[]).map((r) => [r.tenant_id, r.n]));
      const pending = new Map(pendingBefore);
      const admitted: Waiting[] = [];
      const refused: Waiting[] = [];
      for (const w of batch) {
        const n = limitedCount(w.prepared);
        const depth = pending.get(w.meta.tenantId) ?? 0;
        if (n > 0 && depth + n > max) {
          refused.push(w);
          continue;
        }
        pending.set(w.meta.tenantId, depth + n);
        admitted.push(w);
      }
      const prepared = admitted.flatMap((w) => w.prepared);
      if (prepared.length) {
        const now = this.kernel.clock.now();
        const { live, record } = chooseLive(prepared, pendingBefore, windows, limits, now);
        const goesLive = new Set(live.map((p) => p.id));
        const queued = prepared.filter((p) => !goesLive.has(p.id));
        const entries = liveEntries(live);
        const written = await pipelined(client, [
          ...(queued.length ? [insertDeliveries(queued)] : []),
          ...(entries.length ? [bufferInsert(entries, now)] : []),
        ]);
        const envelopes = entries.length
          ? envelopesOf(entries, written.at(-1)!.rows as { notification_id: string; seq: string }[])
          : [];
        const onCommit = envelopes.length ? socketBus(this.kernel).publishOnCommit(envelopes) : null;
        const metaOf = new Map(admitted.flatMap((w) => w.prepared.map((p) => [p.id, w.meta] as const)));
        const appends = prepared.map((p) => ({
          request: goesLive.has(p.id) ? liveAppend(p, now.toISOString()) : queuedAppend(p),
          meta: metaOf.get(p.id)!,
        }));
        const { statements, events } = store.prepareAppends(appends, now);
        await pipelined(client, [
          ...statements,
          ...projections.inlineStatements(events),
          ...(record ? [statement(record)] : []),
          ...(onCommit ? [onCommit] : []),
          ...(queued.length ? [statement(WAKE_SQL)] : []),
          statement('COMMIT'),
        ]);
        if (!onCommit) published = envelopes;
      } else {
        await client.query('COMMIT');
      }
      for (const w of admitted) w.resolve(w.prepared.map(accepted));
      for (const w of refused) w.reject(notifyErrors.queueFull(max));
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      for (const w of batch) w.reject(error);
    } finally {
      client.release();
    }
    // a bus that cannot publish with the commit (Redis) publishes once committed: at most once
    // live, like any publish; a message missed is in the buffer for the client's replay
    if (published.length)
      await socketBus(this.kernel)
        .publish(published)
        .catch((error: unknown) =>
          this.kernel.logger.warn({ err: error }, 'live notifications buffered but not published; clients replay them'),
        );
  }
}

/** the rate windows the websocket notifications of a batch count against, locked with the tenants */
const liveWindowKeys = (prepared: readonly PreparedNotification[], limits: { perTenant: number; perModule: number }) =>
  windowKeysOf(liveCandidates(prepared, limits));

const acceptors = new WeakMap<Kernel, Acceptor>();
export const acceptorOf = (kernel: Kernel): Acceptor => {
  let acceptor = acceptors.get(kernel);
  if (!acceptor) {
    acceptor = new Acceptor(kernel);
    acceptors.set(kernel, acceptor);
  }
  return acceptor;
};
