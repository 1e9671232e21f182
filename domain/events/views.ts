import { z } from 'zod';
import { JsonObject } from '../shared/json';

/** What the bus answers (spec 002, Event and the items and responses it lists; the rest is ours, docs/decisions.md). */
export const EventView = z.object({
  eventId: z.string().describe('UUID v7; receivers deduplicate by it'),
  type: z.string(),
  source: z.string(),
  tenantId: z.string(),
  entityId: z.string(),
  payload: JsonObject,
  schemaVersion: z.string(),
  traceId: z.string().nullable(),
  timestamp: z.string(),
});
export type EventView = z.infer<typeof EventView>;

export const PublishedView = z.object({
  eventId: z.string(),
  topic: z.string(),
  type: z.string(),
  status: z.literal('queued'),
  createdAt: z.string(),
});
export const BatchPublishedView = z.object({
  topic: z.string(),
  status: z.literal('queued'),
  count: z.number().int(),
  events: z.array(z.object({ eventId: z.string(), type: z.string() })),
  createdAt: z.string(),
});

export const TopicItem = z.object({
  topic: z.string(),
  domain: z.string(),
  partitions: z.number().int(),
  retention: z.string(),
  examples: z.array(z.string()),
});
export const SchemaView = z.object({
  topic: z.string(),
  schemaVersion: z.string(),
  protoDefinition: z.string(),
  breakingChangesPolicy: z.string(),
  registeredAt: z.string().nullable().describe('null: no schema registered yet, this is the generic envelope'),
});
export const TopicConfigView = z.object({
  topic: z.string(),
  partitions: z.number().int(),
  retention: z.string(),
  retentionMs: z.number().int(),
  cleanupPolicy: z.literal('delete'),
  partitionKey: z.literal('entityId'),
  dlqTopic: z.string(),
  maxPayloadBytes: z.number().int(),
});

export const BusSubscriptionView = z.object({
  id: z.string(),
  topic: z.string(),
  consumerGroup: z.string(),
  handlerName: z.string(),
  source: z.string(),
  delivery: z.enum(['webhook', 'in-process']),
  dedup: z.boolean(),
  status: z.enum(['active', 'deleted']),
  createdAt: z.string(),
  deletedAt: z.string().nullable(),
});
export type BusSubscriptionView = z.infer<typeof BusSubscriptionView>;

export const PositionView = z.object({
  subscriptionId: z.string(),
  topic: z.string(),
  consumerGroup: z.string(),
  partitions: z
    .array(
      z.object({
        partition: z.number().int(),
        currentOffset: z.number().int(),
        logEndOffset: z.number().int(),
        lag: z.number().int(),
      }),
    )
    .describe("offsets count the subscription's tenant's events on each partition only"),
  totalLag: z.number().int(),
  lagSeconds: z.number().int().describe('age of the oldest event not processed yet; 0 when none'),
  alertLevel: z.enum(['ok', 'info', 'warning', 'critical']),
});

export const DlqView = z.object({
  id: z.string(),
  eventId: z.string(),
  topic: z.string(),
  type: z.string(),
  payload: JsonObject,
  failureCount: z.number().int(),
  lastError: z.string(),
  status: z.enum(['pending', 'retrying', 'resolved']),
  createdAt: z.string(),
  subscriptionId: z.string(),
  consumerGroup: z.string(),
  updatedAt: z.string(),
  resolvedAt: z.string().nullable(),
});
export type DlqView = z.infer<typeof DlqView>;

export const TaskView = z.object({
  id: z.string(),
  type: z.string(),
  payload: JsonObject,
  status: z.enum(['queued', 'running', 'done', 'failed']),
  attempts: z.number().int(),
  maxAttempts: z.number().int(),
  runAt: z.string(),
  lastError: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
  completedAt: z.string().nullable(),
});

/** a subscription as both sides read it (rm.events_subscriptions) */
export interface BusSubscriptionRecord {
  tenant_id: string;
  id: string;
  topic: string;
  consumer_group: string;
  handler_name: string;
  source: string;
  delivery: 'webhook' | 'in-process';
  dedup: boolean;
  status: 'active' | 'deleted';
  created_at: Date;
  deleted_at: Date | null;
}

export const subscriptionView = (r: BusSubscriptionRecord): BusSubscriptionView => ({
  id: r.id,
  topic: r.topic,
  consumerGroup: r.consumer_group,
  handlerName: r.handler_name,
  source: r.source,
  delivery: r.delivery,
  dedup: r.dedup,
  status: r.status,
  createdAt: r.created_at.toISOString(),
  deletedAt: r.deleted_at?.toISOString() ?? null,
});

/** a dead letter as both sides read it (events.dlq) */
export interface DlqRecord {
  id: string;
  tenant_id: string;
  subscription_id: string;
  consumer_group: string;
  handler_name: string;
  source: string;
  topic: string;
  partition: number;
  seq: string;
  event_id: string;
  type: string;
  payload: Record<string, unknown>;
  event: string;
  failure_count: number;
  last_error: string;
  status: 'pending' | 'retrying' | 'resolved';
  due_at: Date | null;
  created_at: Date;
  updated_at: Date;
  resolved_at: Date | null;
}

export const dlqView = (r: DlqRecord): DlqView => ({
  id: r.id,
  eventId: r.event_id,
  topic: r.topic,
  type: r.type,
  payload: r.payload,
  failureCount: r.failure_count,
  lastError: r.last_error,
  status: r.status,
  createdAt: r.created_at.toISOString(),
  subscriptionId: r.subscription_id,
  consumerGroup: r.consumer_group,
  updatedAt: r.updated_at.toISOString(),
  resolvedAt: r.resolved_at?.toISOString() ?? null,
});
