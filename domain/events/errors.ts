import type { FieldError } from '../shared/errors';
import { defineErrors } from '../shared/errors';

/** The event bus catalog (spec 002, Errors/Event bus), plus the refusals the spec leaves to us in the same style. */
export const eventErrors = defineErrors({
  brokerUnavailable: () => ({
    status: 503,
    suffix: 'events.broker.unavailable',
    title: 'Broker unavailable',
    detail: 'The log cannot be reached; nothing of the request was published. Retry later.',
    extensions: { retryAfter: 5 },
    headers: { 'Retry-After': '5' },
  }),
  publishForbidden: (detail: string) => ({
    status: 403,
    suffix: 'events.publish.forbidden',
    title: 'Publishing forbidden',
    detail,
  }),
  subscribeForbidden: (detail: string) => ({
    status: 403,
    suffix: 'events.subscribe.forbidden',
    title: 'Subscribing forbidden',
    detail,
  }),
  retentionExceeded: (oldest: string) => ({
    status: 422,
    suffix: 'events.retention.exceeded',
    title: 'Retention exceeded',
    detail: `The bus keeps this topic's events from ${oldest}; a seek cannot go back further.`,
    extensions: { oldestAvailable: oldest },
  }),
  batchLimitExceeded: (max: number, given: number) => ({
    status: 400,
    suffix: 'batch-limit-exceeded',
    title: 'Batch limit exceeded',
    detail: `A batch holds at most ${max} events; ${given} were given.`,
    extensions: { max, given },
  }),
  payloadTooLarge: (limit: number, field: string) => ({
    status: 413,
    suffix: 'payload-too-large',
    title: 'Payload too large',
    detail: `An event's payload is at most ${limit} bytes of JSON (${field}).`,
    errors: [{ field, message: `is larger than ${limit} bytes`, code: 'PAYLOAD_TOO_LARGE' }],
  }),
  topicNotFound: (topic: string) => ({
    status: 404,
    suffix: 'topic-not-found',
    title: 'Topic not found',
    detail: `There is no topic ${JSON.stringify(topic.slice(0, 200))}.`,
  }),
  subscriptionNotFound: () => ({
    status: 404,
    suffix: 'subscription-not-found',
    title: 'Subscription not found',
    detail: 'The subscription does not exist.',
  }),
  consumerGroupTaken: (group: string, topic: string) => ({
    status: 409,
    suffix: 'conflict',
    title: 'Conflict',
    detail: `The consumer group ${group} already subscribes to ${topic}.`,
  }),
  schemaIncompatible: (errors: FieldError[]) => ({
    status: 409,
    suffix: 'events.schema.incompatible',
    title: 'Schema change not backward compatible',
    detail:
      'The new schema breaks readers of the current one; add fields and messages instead, reserve what you remove.',
    errors,
  }),
  schemaVersionConflict: (current: string, given: string) => ({
    status: 409,
    suffix: 'events.schema.version-conflict',
    title: 'Schema version conflict',
    detail: `A new schema needs a version above the current ${current} (got ${given}).`,
    extensions: { currentVersion: current },
  }),
  invalidSchema: (message: string) => ({
    status: 400,
    suffix: 'validation-error',
    title: 'Validation failed',
    detail: 'The Protobuf definition does not parse.',
    errors: [{ field: 'protoDefinition', message: message.slice(0, 500), code: 'INVALID_PROTO' }],
  }),
  schemaForbidden: () => ({
    status: 403,
    suffix: 'forbidden',
    title: 'Forbidden',
    detail: "A topic's schema is changed by the platform owner, or by the module whose topic it is.",
  }),
  dlqEntryNotFound: () => ({
    status: 404,
    suffix: 'not-found',
    title: 'Not found',
    detail: 'The dead letter does not exist.',
  }),
  dlqEntryNotPending: (status: string) => ({
    status: 409,
    suffix: 'conflict',
    title: 'Conflict',
    detail: `Only a pending dead letter can be retried or resolved; this one is ${status}.`,
    extensions: { dlqStatus: status },
  }),
  taskNotFound: () => ({ status: 404, suffix: 'not-found', title: 'Not found', detail: 'The task does not exist.' }),
});
