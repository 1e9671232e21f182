/**
 * The metadata envelope every stored and published event carries (DESIGN.md, "How data flows").
 * Domain code produces only { type, data }; the command handler adds the envelope.
 */
export interface EventMetadata {
  eventId: string; // UUID v7
  type: string; // domain.entity.verb
  schemaVersion: number;
  tenantId: string;
  actorId: string | null;
  traceId: string | null;
  /** the span that appended it, when a sampled trace did: the log's readers continue that trace */
  spanId?: string | null;
  causationId: string | null;
  correlationId: string | null;
  occurredAt: string; // ISO 8601
}

/** What a decider returns: a type and its payload. */
export interface NewEvent<T extends string = string, D = unknown> {
  type: T;
  data: D;
}

/** An event as stored: envelope, payload, and where it sits in its stream and in the global log. */
export interface StoredEvent<D = unknown> extends EventMetadata {
  streamId: string;
  /** 1-based version of the event within its stream */
  streamVersion: number;
  /** global position (sequence); together with transactionId gives commit order */
  position: bigint;
  transactionId: bigint;
  data: D;
}

/** The topic an event is published on: platform.<domain>.events, domain = the first segment of its type. */
export const topicOf = (eventType: string): string => `platform.${eventType.split('.')[0]}.events`;

/**
 * Stream ids carry the tenant (mechanism 4): <aggregate>:<tenantId>:<entityId>. The entity id is
 * the partition key on the log, so one entity's events stay in order.
 */
export const streamIdOf = (aggregate: string, tenantId: string, entityId: string): string =>
  `${aggregate}:${tenantId}:${entityId}`;
export const entityIdOf = (streamId: string): string => streamId.slice(streamId.lastIndexOf(':') + 1);

/**
 * A handled type may be a pattern: a `*` segment stands for any one segment of the type
 * (`data.*.*.created` is every generated model's creation, whose types are made at run time).
 */
export const isTypePattern = (handled: string): boolean => handled !== '*' && handled.split('.').includes('*');
export const typeMatches = (handled: string, type: string): boolean => {
  if (handled === type) return true;
  if (!isTypePattern(handled)) return false;
  const want = handled.split('.');
  const got = type.split('.');
  return want.length === got.length && want.every((w, i) => w === '*' || w === got[i]);
};
/** the SQL LIKE form of handled types, for a first cut in the database (typeMatches decides) */
export const likeOfType = (handled: string): string => handled.replace(/[\\%_]/g, (c) => `\\${c}`).replace(/\*/g, '%');
