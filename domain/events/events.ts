import { z } from 'zod';

/**
 * The bus's own events (platform.events.events): subscriptions and topic schemas are configuration
 * a tenant (or the platform) relies on, so they are event-sourced like any business state. What the
 * bus carries for others (published events, dead letters, deliveries) is operational data.
 */
const BusSubscriptionCreated = z.object({
  type: z.literal('events.subscription.created'),
  data: z.object({
    subscriptionId: z.string(),
    topic: z.string(),
    consumerGroup: z.string(),
    handlerName: z.string(),
    /** the module slug (webhook delivery), or the platform service (in-process handler) */
    source: z.string(),
    delivery: z.enum(['webhook', 'in-process']),
    /** skip an event id the handler already processed */
    dedup: z.boolean(),
    createdAt: z.string(),
  }),
});

const BusSubscriptionDeleted = z.object({
  type: z.literal('events.subscription.deleted'),
  data: z.object({ subscriptionId: z.string(), deletedAt: z.string() }),
});

const BusSubscriptionSought = z.object({
  type: z.literal('events.subscription.sought'),
  data: z.object({
    subscriptionId: z.string(),
    seekTo: z.string(),
    soughtAt: z.string(),
    offsets: z.record(z.string(), z.number().int()),
  }),
});

export const BusSubscriptionEvent = z.discriminatedUnion('type', [
  BusSubscriptionCreated,
  BusSubscriptionDeleted,
  BusSubscriptionSought,
]);
export type BusSubscriptionEvent = z.infer<typeof BusSubscriptionEvent>;
export type BusSubscriptionCreatedData = z.infer<typeof BusSubscriptionCreated>['data'];
export const subscriptionEventTypes = BusSubscriptionEvent.options.map((o) => o.shape.type.value);

const SchemaRegistered = z.object({
  type: z.literal('events.schema.registered'),
  data: z.object({
    topic: z.string(),
    schemaVersion: z.string(),
    protoDefinition: z.string(),
    breakingChangesPolicy: z.enum(['BACKWARD', 'BACKWARD_TRANSITIVE']),
    registeredBy: z.string(),
    registeredAt: z.string(),
  }),
});

export const SchemaEvent = z.discriminatedUnion('type', [SchemaRegistered]);
export type SchemaEvent = z.infer<typeof SchemaEvent>;
export type SchemaRegisteredData = z.infer<typeof SchemaRegistered>['data'];
