import { z } from 'zod';

/** What the bus answers (spec 002, Event and the items and responses it lists; the rest is ours, docs/decisions.md). */
export const EventView = z.object({
  eventId: z.string().describe('UUID v7; receivers deduplicate by it'),
  type: z.string(), source: z.string(), tenantId: z.string(), entityId: z.string(),
  payload: z.record(z.string(), z.unknown()), schemaVersion: z.string(), traceId: z.string().nullable(), timestamp: z.string(),
});
export type EventView = z.infer<typeof EventView>;

export const PublishedView = z.object({ eventId: z.string(), topic: z.string(), type: z.string(), status: z.literal('queued'), createdAt: z.string() });
export const BatchPublishedView = z.object({
  topic: z.string(), status: z.literal('queued'), count: z.number().int(),
  events: z.array(z.object({ eventId: z.string(), type: z.string() })), createdAt: z.string(),
});

export const TopicItem = z.object({ topic: z.string(), domain: z.string(), partitions: z.number().int(), retention: z.string(), examples: z.array(z.string()) });
export const SchemaView = z.object({
  topic: z.string(), schemaVersion: z.string(), protoDefinition: z.string(), breakingChangesPolicy: z.string(),
  registeredAt: z.string().nullable().describe('null: no schema registered yet, this is the generic envelope'),
});
export const TopicConfigView = z.object({
  topic: z.string(), partitions: z.number().int(), retention: z.string(), retentionMs: z.number().int(), cleanupPolicy: z.literal('delete'),
  partitionKey: z.literal('entityId'), dlqTopic: z.string(), maxPayloadBytes: z.number().int(),
});

export const SubscriptionView = z.object({
  id: z.string(), topic: z.string(), consumerGroup: z.string(), handlerName: z.string(), source: z.string(),
  delivery: z.enum(['webhook', 'in-process']), dedup: z.boolean(), status: z.enum(['active', 'deleted']), createdAt: z.string(), deletedAt: z.string().nullable(),
});
export type SubscriptionView = z.infer<typeof SubscriptionView>;

export const PositionView = z.object({
  subscriptionId: z.string(), topic: z.string(), consumerGroup: z.string(),
  partitions: z.array(z.object({ partition: z.number().int(), currentOffset: z.number().int(), logEndOffset: z.number().int(), lag: z.number().int() }))
    .describe('offsets count the subscription\'s tenant\'s events on each partition only'),
  totalLag: z.number().int(),
  lagSeconds: z.number().int().describe('age of the oldest event not processed yet; 0 when none'),
  alertLevel: z.enum(['ok', 'info', 'warning', 'critical']),
});

export const DlqView = z.object({
  id: z.string(), eventId: z.string(), topic: z.string(), type: z.string(), payload: z.record(z.string(), z.unknown()),
  failureCount: z.number().int(), lastError: z.string(), status: z.enum(['pending', 'retrying', 'resolved']), createdAt: z.string(),
  subscriptionId: z.string(), consumerGroup: z.string(), updatedAt: z.string(), resolvedAt: z.string().nullable(),
});
export type DlqView = z.infer<typeof DlqView>;

export const TaskView = z.object({
  id: z.string(), type: z.string(), payload: z.record(z.string(), z.unknown()), status: z.enum(['queued', 'running', 'done', 'failed']),
  attempts: z.number().int(), maxAttempts: z.number().int(), runAt: z.string(), lastError: z.string().nullable(),
  createdAt: z.string(), updatedAt: z.string(), completedAt: z.string().nullable(),
});
