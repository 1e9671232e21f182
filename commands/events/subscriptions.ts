import { eventErrors } from '../../domain/events/errors';
import { BusSubscriptionEvent } from '../../domain/events/events';
import { busSubscriptionDecider } from '../../domain/events/subscription';
import { retentionHoursOf } from '../../domain/events/topics';
import type { BusSubscriptionView } from '../../domain/events/views';
import { commonErrors } from '../../domain/shared/errors';
import { streamIdOf } from '../../domain/shared/event';
import { defineAggregate } from '../../infra/eventstore/aggregate';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import type { Principal } from '../../infra/http/auth';
import type { Kernel } from '../../infra/kernel';
import type { Queryable } from '../../infra/postgres/db';
import { activeSubscriptionByGroup, findSubscription, type BusSubscriptionRow } from './lookups';
import { moduleOfPrincipal, requireTopic } from './catalog';
import { subscriptionLockName } from './locks';

export const BusSubscriptionAggregate = defineAggregate({
  name: 'events.subscription',
  decider: busSubscriptionDecider,
  stateSchema: 'events.subscription.v1',
  toEvent: (e) => BusSubscriptionEvent.parse(e),
});
const subscriptionStream = (tenantId: string, id: string): string => streamIdOf('events.subscription', tenantId, id);

/** consumerGroup names <service>.<handler-name> (spec 002): the service is the subscriber's own name */
const GROUP_NAME = /^[a-z][a-z0-9_]*\.[a-z0-9][a-z0-9_.-]{0,99}$/;

export interface BusSubscriptionInput {
  topic: string;
  consumerGroup: string;
  handlerName: string;
  dedup?: boolean;
}

/** partitions and retention of a topic the bus creates on the log */
export const topicSpecOf = (kernel: Kernel, topic: string) => ({
  name: topic,
  partitions: kernel.config.KAFKA_PARTITIONS,
  retentionMs: retentionHoursOf(topic, kernel.config.KAFKA_RETENTION_HOURS) * 3600_000,
});

/**
 * A subscription of the caller's tenant (spec 002): modules only, to topics their manifest
 * subscribes to, delivered by webhook to the module's endpoint. A user's token has no manifest: it
 * cannot subscribe (platform services subscribe in process, createInProcessSubscription).
 */
export const createSubscription = async (
  kernel: Kernel,
  uow: UnitOfWork,
  principal: Principal,
  input: BusSubscriptionInput,
): Promise<BusSubscriptionView> => {
  const module = await moduleOfPrincipal(uow.tx, principal);
  if (!module)
    throw eventErrors.subscribeForbidden(
      "Subscriptions belong to modules (a module key) and platform services; a user's token has no manifest to subscribe with.",
    );
  if (!module.manifest.events.subscribes.includes(input.topic)) {
    throw eventErrors.subscribeForbidden(
      `${input.topic} is not among the topics the module ${module.slug} declares in manifest.events.subscribes.`,
    );
  }
  return subscribe(kernel, uow, { ...input, source: module.slug, delivery: 'webhook' });
};

/** a platform service's subscription of one tenant, consumed by a handler registered in process (registerEventHandler) */
export const createInProcessSubscription = (
  kernel: Kernel,
  uow: UnitOfWork,
  service: string,
  input: BusSubscriptionInput,
): Promise<BusSubscriptionView> => subscribe(kernel, uow, { ...input, source: service, delivery: 'in-process' });

const subscribe = async (
  kernel: Kernel,
  uow: UnitOfWork,
  input: BusSubscriptionInput & { source: string; delivery: 'webhook' | 'in-process' },
): Promise<BusSubscriptionView> => {
  const tenantId = uow.meta.tenantId;
  await requireTopic(uow.tx, input.topic);
  if (!GROUP_NAME.test(input.consumerGroup) || !input.consumerGroup.startsWith(`${input.source}.`)) {
    throw commonErrors.validation([
      {
        field: 'consumerGroup',
        message: `a consumer group is named ${input.source}.<handler-name>`,
        code: 'CONSUMER_GROUP_NAME',
      },
    ]);
  }
  await uow.tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
    `events.consumer-group:${tenantId}:${input.consumerGroup}:${input.topic}`,
  ]);
  if (await activeSubscriptionByGroup(uow.tx, tenantId, input.consumerGroup, input.topic))
    throw eventErrors.consumerGroupTaken(input.consumerGroup, input.topic);
  // Where the subscription starts: the tenant's records from now on. The tenant's heads are read
  // before the log's end, so a record copied meanwhile is either below the head (and was on the log
  // before) or at or past it, where the log-offset floor sorts out what came before the subscription.
  const heads = await tenantHeads(uow.tx, input.topic, tenantId);
  await kernel.log.ensureTopics([topicSpecOf(kernel, input.topic)]);
  const ends = await kernel.log.positions('events.log-end', input.topic);
  const subscriptionId = kernel.ids.next();
  const createdAt = kernel.clock.now().toISOString();
  await uow.tx.query(
    `INSERT INTO events.cursors (subscription_id, partition, tenant_id, topic, next_seq, min_log_offset)
    SELECT $1, p, $2, $3, s, o FROM unnest($4::int[], $5::bigint[], $6::bigint[]) AS t(p, s, o)`,
    [
      subscriptionId,
      tenantId,
      input.topic,
      ends.map((e) => e.partition),
      ends.map((e) => heads.get(e.partition) ?? 0),
      ends.map((e) => e.logEndOffset),
    ],
  );
  const data = {
    subscriptionId,
    topic: input.topic,
    consumerGroup: input.consumerGroup,
    handlerName: input.handlerName,
    source: input.source,
    delivery: input.delivery,
    dedup: input.dedup ?? false,
    createdAt,
  };
  uow.decide(
    BusSubscriptionAggregate,
    await uow.load(BusSubscriptionAggregate, subscriptionStream(tenantId, subscriptionId)),
    { type: 'CreateSubscription', data },
  );
  return { id: subscriptionId, ...data, status: 'active', deletedAt: null };
};

const tenantHeads = async (q: Queryable, topic: string, tenantId: string): Promise<Map<number, number>> => {
  const { rows } = await q.query<{ partition: number; next_seq: string }>(
    'SELECT partition, next_seq FROM events.tenant_heads WHERE topic = $1 AND tenant_id = $2',
    [topic, tenantId],
  );
  return new Map(rows.map((r) => [r.partition, Number(r.next_seq)]));
};

/** a subscription the caller may act on: its tenant's, and for a module only its own (another's is 404) */
export const visibleSubscription = async (
  q: Queryable,
  principal: Principal,
  id: string,
): Promise<BusSubscriptionRow> => {
  const found = await findSubscription(q, principal.tenantId, id, principal.source);
  if (!found || found.status !== 'active') throw eventErrors.subscriptionNotFound();
  return found;
};

/** unsubscribes: the cursors go (after the batch in flight), dead letters stay */
export const deleteSubscription = async (
  kernel: Kernel,
  uow: UnitOfWork,
  principal: Principal,
  id: string,
): Promise<void> => {
  const found = await visibleSubscription(uow.tx, principal, id);
  await uow.tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [subscriptionLockName(found.id)]);
  await uow.tx.query('DELETE FROM events.cursors WHERE subscription_id = $1', [found.id]);
  await uow.tx.query('DELETE FROM events.lag_alerts WHERE subscription_id = $1', [found.id]);
  await uow.tx.query('DELETE FROM events.processed WHERE subscription_id = $1', [found.id]);
  uow.decide(
    BusSubscriptionAggregate,
    await uow.load(BusSubscriptionAggregate, subscriptionStream(found.tenant_id, found.id)),
    { type: 'DeleteSubscription', deletedAt: kernel.clock.now().toISOString() },
  );
};

/** the earliest time a seek may go back to on a topic: its retention, and the start of the bus's copy of it */
export const oldestSeekable = async (kernel: Kernel, q: Queryable, topic: string): Promise<Date> => {
  const retained =
    kernel.clock.now().getTime() - retentionHoursOf(topic, kernel.config.KAFKA_RETENTION_HOURS) * 3600_000;
  const { rows } = await q.query<{ indexed_since: Date }>(
    'SELECT indexed_since FROM events.fanout_topics WHERE topic = $1',
    [topic],
  );
  return new Date(Math.max(retained, rows[0]?.indexed_since.getTime() ?? retained));
};

/**
 * Moves the subscription to the first of its tenant's events at or after seekTo on each partition:
 * they are delivered again (a deduplicating handler forgets them, so it gets them too). Before the
 * topic's retention → 422 events.retention.exceeded.
 */
export const seekSubscription = async (
  kernel: Kernel,
  uow: UnitOfWork,
  principal: Principal,
  id: string,
  seekTo: Date,
): Promise<{ subscriptionId: string; seekTo: string; partitions: { partition: number; offset: number }[] }> => {
  const found = await visibleSubscription(uow.tx, principal, id);
  const oldest = await oldestSeekable(kernel, uow.tx, found.topic);
  if (seekTo.getTime() < oldest.getTime()) throw eventErrors.retentionExceeded(oldest.toISOString());
  await uow.tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [subscriptionLockName(found.id)]);
  const { rows } = await uow.tx.query<{ partition: number; target: string }>(
    `UPDATE events.cursors c SET next_seq = t.target, min_log_offset = 0, attempts = 0, last_error = NULL, retry_at = NULL,
           done_seqs = '{}', holds = '{}', scan_seq = t.target
       FROM (SELECT c2.partition, coalesce(
               (SELECT min(r.seq) FROM events.records r WHERE r.topic = c2.topic AND r.tenant_id = c2.tenant_id AND r.partition = c2.partition AND r.ts >= $2),
               (SELECT h.next_seq FROM events.tenant_heads h WHERE h.topic = c2.topic AND h.tenant_id = c2.tenant_id AND h.partition = c2.partition), 0) AS target
             FROM events.cursors c2 WHERE c2.subscription_id = $1) t
      WHERE c.subscription_id = $1 AND c.partition = t.partition
      RETURNING c.partition, c.next_seq AS target`,
    [found.id, seekTo],
  );
  await uow.tx.query('DELETE FROM events.processed WHERE subscription_id = $1 AND ts >= $2', [found.id, seekTo]);
  const offsets = Object.fromEntries(rows.map((r) => [String(r.partition), Number(r.target)]));
  uow.decide(
    BusSubscriptionAggregate,
    await uow.load(BusSubscriptionAggregate, subscriptionStream(found.tenant_id, found.id)),
    { type: 'SeekSubscription', seekTo: seekTo.toISOString(), soughtAt: kernel.clock.now().toISOString(), offsets },
  );
  return {
    subscriptionId: found.id,
    seekTo: seekTo.toISOString(),
    partitions: rows
      .map((r) => ({ partition: r.partition, offset: Number(r.target) }))
      .sort((a, b) => a.partition - b.partition),
  };
};
