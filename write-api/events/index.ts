import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { JsonObject } from '../../domain/shared/json';
import { replayAll, resolveDeadLetter, retryDeadLetter } from '../../commands/events/dlq';
import { requireTopic } from '../../commands/events/catalog';
import { eventsContext } from '../../commands/events/context';
import type { PublishInput } from '../../commands/events/publish';
import { BATCH_MAX, publishEvents } from '../../commands/events/publish';
import { registerSchema } from '../../commands/events/schemas';
import { createSubscription, deleteSubscription, seekSubscription } from '../../commands/events/subscriptions';
import { BREAKING_CHANGES_POLICIES } from '../../domain/events/compatibility';
import { eventErrors } from '../../domain/events/errors';
import {
  BatchPublishedView,
  DlqView,
  PublishedView,
  SchemaView,
  BusSubscriptionView,
  dlqView,
} from '../../domain/events/views';
import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import { EventType, SemVer, TopicName } from '../../domain/modules/manifest';
import { commonErrors } from '../../domain/shared/errors';
import { requestMeta } from '../../infra/http/commands';
import { defineRoutes } from '../../infra/services';
import { jsonSchemaOf } from '../../infra/http/operation-docs';
import { callerOf } from '../../infra/http/auth';

/** every mutation of the bus writes the tenant's data (events, subscriptions, dead letters): refused while suspended */
const publish = { access: 'permission', permission: 'events.publish', whileSuspended: 'refused' } as const;
const subscribe = { access: 'permission', permission: 'events.subscribe', whileSuspended: 'refused' } as const;
const manage = { access: 'permission', permission: 'events.manage', whileSuspended: 'refused' } as const;

/** one event of a publish: the envelope (eventId, source, tenantId, traceId, timestamp) is the platform's */
const EventInput = z.object({
  type: EventType,
  payload: JsonObject.describe('at most 1 MB of JSON (413 above)'),
  schemaVersion: SemVer.optional().describe(
    "the topic schema's version the payload follows (default: the current one)",
  ),
  entityId: z
    .string()
    .min(1)
    .max(256)
    .optional()
    .describe('the partition key: events of one entity keep their order (default: the event id)'),
});
const PublishBody = EventInput.extend({ topic: TopicName });
const BatchBody = z.object({
  topic: TopicName,
  // items are checked one by one after the count (batch-limit-exceeded first); the document shows what each must be
  events: z
    .array(z.unknown())
    .min(1)
    .describe(`1 to ${BATCH_MAX} events {type, payload, schemaVersion?, entityId?}`)
    .meta({ items: jsonSchemaOf(EventInput), maxItems: BATCH_MAX }),
});
const BusSubscriptionBody = z.object({
  topic: TopicName,
  consumerGroup: z.string().min(3).max(150).describe("<service>.<handler-name>; the service is the module's slug"),
  handlerName: z
    .string()
    .min(1)
    .max(100)
    .regex(/^[a-zA-Z0-9_.-]+$/, 'letters, digits, dot, dash, underscore'),
  dedup: z.boolean().optional().describe('skip events the handler already processed (by eventId); default false'),
});
const Id = z.object({ id: z.uuid() });

const itemErrors = (error: z.ZodError, prefix: string) =>
  error.issues.map((i) => ({
    field: [prefix, ...i.path.map(String)].join('.'),
    message: i.message,
    code: i.code.toUpperCase(),
  }));

/**
 * The event bus's writes (spec 002, Event bus). A module calls with its module key (source = its
 * slug, publishes and subscribes bounded by its manifest); a user's token publishes app.* events
 * only (docs/decisions.md). Every publish is staged whole and relayed: 202 queued.
 */
export default defineRoutes({
  namespace: 'events',
  permissions: {
    'events.publish': 'publish events (POST /events/publish, /events/publish/batch)',
    'events.subscribe': "manage the module's subscriptions (create, delete, seek, position)",
    'events.manage': "read topics and dead letters, redrive and resolve dead letters, change a topic's schema",
  },
  register(app, kernel) {
    const r = app.withTypeProvider<ZodTypeProvider>();

    r.post(
      '/events/publish',
      {
        config: { ...publish, counts: 'events_per_day', problems: [402, 403, 404, 413, 503] },
        bodyLimit: 1_048_576 + 64 * 1024,
        schema: { summary: 'Publish an event', body: PublishBody, response: { 202: PublishedView } },
      },
      async (request, reply) => {
        const { topic, ...input } = request.body;
        const { events, createdAt } = await publishEvents(
          kernel,
          callerOf(request),
          request.id,
          topic,
          [input],
          () => '',
        );
        return reply
          .code(202)
          .send({ eventId: events[0]!.eventId, topic, type: input.type, status: 'queued' as const, createdAt });
      },
    );

    r.post(
      '/events/publish/batch',
      {
        config: { ...publish, counts: 'events_per_day', problems: [402, 403, 404, 413, 503] },
        bodyLimit: eventsContext(kernel).settings.batchMaxBytes,
        schema: {
          summary: `Publish up to ${BATCH_MAX} events on one topic, all or nothing`,
          body: BatchBody,
          response: { 202: BatchPublishedView },
        },
      },
      async (request, reply) => {
        const { topic, events } = request.body;
        if (events.length > BATCH_MAX) throw eventErrors.batchLimitExceeded(BATCH_MAX, events.length);
        const inputs = events.map((item, i): PublishInput => {
          const parsed = EventInput.safeParse(item);
          if (!parsed.success)
            throw commonErrors.validation(
              itemErrors(parsed.error, `events.${i}`),
              'An event of the batch is not valid; nothing was published.',
            );
          return parsed.data;
        });
        const published = await publishEvents(
          kernel,
          callerOf(request),
          request.id,
          topic,
          inputs,
          (i) => `events.${i}.`,
        );
        return reply.code(202).send({
          topic,
          status: 'queued' as const,
          count: published.events.length,
          events: published.events,
          createdAt: published.createdAt,
        });
      },
    );

    r.post(
      '/events/subscriptions',
      {
        config: { ...subscribe, problems: [403, 404, 409] },
        schema: {
          summary: 'Subscribe the module to a topic of its manifest',
          body: BusSubscriptionBody,
          response: { 201: BusSubscriptionView },
        },
      },
      async (request, reply) => {
        const created = await kernel.commands.run(requestMeta(request), (uow) =>
          createSubscription(kernel, uow, callerOf(request), request.body),
        );
        return reply.code(201).send(created);
      },
    );

    r.delete(
      '/events/subscriptions/:id',
      {
        config: { ...subscribe, problems: [404] },
        schema: { summary: 'Unsubscribe', params: Id, response: { 204: z.null() } },
      },
      async (request, reply) => {
        await kernel.commands.run(requestMeta(request), (uow) =>
          deleteSubscription(kernel, uow, callerOf(request), request.params.id),
        );
        return reply.code(204).send(null);
      },
    );

    r.post(
      '/events/subscriptions/:id/seek',
      {
        config: { ...subscribe, problems: [404, 422] },
        schema: {
          summary: "Deliver the subscription's events again from a time on",
          params: Id,
          body: z.object({ seekTo: z.iso.datetime({ offset: true }) }),
          response: {
            202: z.object({
              subscriptionId: z.string(),
              seekTo: z.string(),
              partitions: z.array(z.object({ partition: z.number().int(), offset: z.number().int() })),
            }),
          },
        },
      },
      async (request, reply) => {
        const sought = await kernel.commands.run(requestMeta(request), (uow) =>
          seekSubscription(kernel, uow, callerOf(request), request.params.id, new Date(request.body.seekTo)),
        );
        return reply.code(202).send(sought);
      },
    );

    r.put(
      '/events/topics/:topic/schema',
      {
        config: { ...manage, problems: [403, 404, 409] },
        schema: {
          summary:
            "Register a new version of the topic's Protobuf schema (refused with 409 when it breaks readers of the current one)",
          params: z.object({ topic: z.string().max(200) }),
          body: z.object({
            protoDefinition: z
              .string()
              .min(1)
              .max(256 * 1024),
            schemaVersion: SemVer,
            breakingChangesPolicy: z.enum(BREAKING_CHANGES_POLICIES).optional(),
          }),
          response: { 200: SchemaView },
        },
      },
      async (request) => {
        const meta = { ...requestMeta(request), tenantId: PLATFORM_TENANT_ID };
        return kernel.commands.run(meta, async (uow) =>
          registerSchema(
            kernel,
            uow,
            await requireTopic(uow.tx, request.params.topic),
            callerOf(request),
            request.body,
          ),
        );
      },
    );

    r.post(
      '/events/dlq/:id/retry',
      {
        config: { ...manage, problems: [404, 409] },
        schema: { summary: 'Redeliver a pending dead letter (retrying)', params: Id, response: { 202: DlqView } },
      },
      async (request, reply) =>
        reply.code(202).send(dlqView(await retryDeadLetter(kernel, callerOf(request), request.params.id, request.id))),
    );

    r.post(
      '/events/dlq/replay-all',
      {
        config: manage,
        schema: {
          summary: 'Redeliver every pending dead letter of the tenant at DLQ_REPLAY_RATE_LIMIT per second',
          body: z.object({ topic: z.string().max(200).optional(), subscriptionId: z.uuid().optional() }).optional(),
          response: { 202: z.object({ replayed: z.number().int(), skipped_already_resolved: z.number().int() }) },
        },
      },
      async (request, reply) =>
        reply.code(202).send(await replayAll(kernel, callerOf(request), request.body ?? {}, request.id)),
    );

    r.delete(
      '/events/dlq/:id',
      {
        config: { ...manage, problems: [404, 409] },
        schema: { summary: 'Mark a dead letter resolved', params: Id, response: { 200: DlqView } },
      },
      async (request) => dlqView(await resolveDeadLetter(kernel, callerOf(request), request.params.id, request.id)),
    );
  },
});
