import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { eventErrors } from '../../domain/events/errors';
import { retentionHoursOf } from '../../domain/events/topics';
import {
  DlqView,
  PositionView,
  SchemaView,
  BusSubscriptionView,
  TaskView,
  TopicConfigView,
  TopicItem,
  dlqView,
  subscriptionView,
} from '../../domain/events/views';
import { dlqTopicOfDomain } from '../../domain/modules/manifest';
import type { Principal } from '../../infra/http/auth';
import { decodeCursor, pageEnvelope, pageQuery, toPage } from '../../infra/http/pagination';
import type { Kernel } from '../../infra/kernel';
import { defineRoutes } from '../../infra/services';
import type { Queryable } from '../../infra/postgres/db';
import { findModule } from '../../projections/modules/queries';
import {
  currentSchema,
  findDlq,
  findSubscription,
  findTask,
  findTopic,
  listDlq,
  listSubscriptions,
  listTasks,
  positionOf,
  taskOf,
  topicCatalog,
} from '../../projections/events/queries';
import { callerOf } from '../../infra/http/auth';

const subscribe = { access: 'permission', permission: 'events.subscribe' } as const;
const manage = { access: 'permission', permission: 'events.manage' } as const;
const Id = z.object({ id: z.uuid() });
const Topic = z.object({ topic: z.string().max(200) });
const PAYLOAD_MAX_BYTES = 1_048_576;

const retentionOf = (kernel: Kernel, topic: string) => {
  const hours = retentionHoursOf(topic, kernel.config.KAFKA_RETENTION_HOURS);
  return { retention: `${hours}h`, retentionMs: hours * 3600_000 };
};

/** a module sees the topics of its manifest's subscribes (and its own); a user every topic */
const visibleTopics = async (q: Queryable, principal: Principal): Promise<(topic: string) => boolean> => {
  if (!principal.moduleId) return () => true;
  const module = await findModule(q, principal.moduleId);
  const own = module ? `platform.${module.slug}.events` : null;
  const subscribes = new Set(module?.manifest.events.subscribes ?? []);
  return (topic) => topic === own || subscribes.has(topic);
};

const requireVisibleTopic = async (kernel: Kernel, principal: Principal, topic: string) => {
  const entry = await findTopic(kernel.db, topic);
  if (!entry || !(await visibleTopics(kernel.db, principal))(topic)) throw eventErrors.topicNotFound(topic);
  return entry;
};

/**
 * The event bus's reads (spec 002, Event bus). Everything a tenant reads is its own: subscriptions,
 * positions (its own events' offsets), dead letters and tasks; a module reads only its own
 * subscriptions and dead letters within its tenant.
 */
export default defineRoutes({
  namespace: 'events',
  register(app, kernel) {
    const r = app.withTypeProvider<ZodTypeProvider>();

    r.get(
      '/events/topics',
      {
        config: manage,
        schema: {
          summary: 'Topics (a module: those its manifest subscribes to, and its own)',
          querystring: z.object(pageQuery),
          response: { 200: pageEnvelope(TopicItem) },
        },
      },
      async (request) => {
        const visible = await visibleTopics(kernel.db, callerOf(request));
        const after = decodeCursor(request.query.page_token, ['topic'])?.topic ?? '';
        const topics = (await topicCatalog(kernel.db))
          .filter((t) => visible(t.topic) && t.topic > after)
          .slice(0, request.query.page_size + 1);
        return toPage(
          topics,
          request.query.page_size,
          (t) => ({
            topic: t.topic,
            domain: t.domain,
            partitions: kernel.config.KAFKA_PARTITIONS,
            retention: retentionOf(kernel, t.topic).retention,
            examples: t.examples,
          }),
          (t) => ({ topic: t.topic }),
        );
      },
    );

    r.get(
      '/events/topics/:topic/schema',
      {
        config: { ...manage, problems: [404] },
        schema: { summary: "The topic's current Protobuf schema", params: Topic, response: { 200: SchemaView } },
      },
      async (request) =>
        currentSchema(kernel.db, await requireVisibleTopic(kernel, callerOf(request), request.params.topic)),
    );

    r.get(
      '/events/topics/:topic/config',
      {
        config: { ...manage, problems: [404] },
        schema: { summary: "The topic's retention and partitions", params: Topic, response: { 200: TopicConfigView } },
      },
      async (request) => {
        const entry = await requireVisibleTopic(kernel, callerOf(request), request.params.topic);
        return {
          topic: entry.topic,
          partitions: kernel.config.KAFKA_PARTITIONS,
          ...retentionOf(kernel, entry.topic),
          cleanupPolicy: 'delete' as const,
          partitionKey: 'entityId' as const,
          dlqTopic: dlqTopicOfDomain(entry.domain),
          maxPayloadBytes: PAYLOAD_MAX_BYTES,
        };
      },
    );

    r.get(
      '/events/subscriptions',
      {
        config: subscribe,
        schema: {
          summary: 'Active subscriptions (a module: its own)',
          querystring: z.object({ ...pageQuery, topic: z.string().max(200).optional() }),
          response: { 200: pageEnvelope(BusSubscriptionView) },
        },
      },
      async (request) => {
        const q = request.query;
        const p = callerOf(request);
        const rows = await listSubscriptions(kernel.db, p.tenantId, {
          source: p.source,
          topic: q.topic,
          afterId: decodeCursor(q.page_token, ['id'])?.id,
          limit: q.page_size + 1,
        });
        return toPage(rows, q.page_size, subscriptionView, (row) => ({ id: row.id }));
      },
    );

    r.get(
      '/events/subscriptions/:id',
      {
        config: { ...subscribe, problems: [404] },
        schema: { summary: 'A subscription', params: Id, response: { 200: BusSubscriptionView } },
      },
      async (request) => {
        const found = await findSubscription(
          kernel.db,
          callerOf(request).tenantId,
          request.params.id,
          callerOf(request).source,
        );
        if (!found || found.status !== 'active') throw eventErrors.subscriptionNotFound();
        return subscriptionView(found);
      },
    );

    r.get(
      '/events/subscriptions/:id/position',
      {
        config: { ...subscribe, problems: [404] },
        schema: {
          summary: "Where the subscription stands on each partition (its tenant's events only)",
          params: Id,
          response: { 200: PositionView },
        },
      },
      async (request) => {
        const found = await findSubscription(
          kernel.db,
          callerOf(request).tenantId,
          request.params.id,
          callerOf(request).source,
        );
        if (!found || found.status !== 'active') throw eventErrors.subscriptionNotFound();
        return positionOf(kernel.db, kernel.clock.now(), found);
      },
    );

    r.get(
      '/events/dlq',
      {
        config: manage,
        schema: {
          summary: 'Dead letters of the tenant (a module: of its subscriptions), newest first',
          querystring: z.object({
            ...pageQuery,
            topic: z.string().max(200).optional(),
            status: z.enum(['pending', 'retrying', 'resolved']).optional(),
          }),
          response: { 200: pageEnvelope(DlqView) },
        },
      },
      async (request) => {
        const q = request.query;
        const p = callerOf(request);
        const after = decodeCursor(q.page_token, z.object({ at: z.iso.datetime(), id: z.uuid() }));
        const rows = await listDlq(kernel.db, p.tenantId, {
          source: p.source,
          topic: q.topic,
          status: q.status,
          after: after ?? undefined,
          limit: q.page_size + 1,
        });
        return toPage(rows, q.page_size, dlqView, (row) => ({ at: row.created_at.toISOString(), id: row.id }));
      },
    );

    r.get(
      '/events/dlq/:id',
      {
        config: { ...manage, problems: [404] },
        schema: { summary: 'A dead letter', params: Id, response: { 200: DlqView } },
      },
      async (request) => {
        const found = await findDlq(kernel.db, callerOf(request).tenantId, request.params.id, callerOf(request).source);
        if (!found) throw eventErrors.dlqEntryNotFound();
        return dlqView(found);
      },
    );

    r.get(
      '/events/tasks',
      {
        config: manage,
        schema: {
          summary: "The tenant's transactional tasks, newest first",
          querystring: z.object({
            ...pageQuery,
            status: z.enum(['queued', 'running', 'done', 'failed']).optional(),
            type: z.string().max(200).optional(),
          }),
          response: { 200: pageEnvelope(TaskView) },
        },
      },
      async (request) => {
        const q = request.query;
        const after = decodeCursor(q.page_token, z.object({ at: z.iso.datetime(), id: z.uuid() }));
        const rows = await listTasks(kernel.db, callerOf(request).tenantId, {
          status: q.status,
          type: q.type,
          after: after ?? undefined,
          limit: q.page_size + 1,
        });
        return toPage(rows, q.page_size, taskOf, (row) => ({ at: row.created_at.toISOString(), id: row.id }));
      },
    );

    r.get(
      '/events/tasks/:id',
      {
        config: { ...manage, problems: [404] },
        schema: { summary: 'A task', params: Id, response: { 200: TaskView } },
      },
      async (request) => {
        const found = await findTask(kernel.db, callerOf(request).tenantId, request.params.id);
        if (!found) throw eventErrors.taskNotFound();
        return taskOf(found);
      },
    );
  },
});
