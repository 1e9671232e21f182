import { platformSourceOf } from '../../domain/events/topics';
import type { EventView } from '../../domain/events/views';
import { decodeEvent } from '../../infra/events/envelope';
import type { LogRecord } from '../../infra/log/port';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A log record as the bus's Event resource (spec 002, Event), read by the one decoder
 * (infra/events/envelope.ts) — records of the bus and of the outbox relay alike, and those written
 * before the envelope was the spec's (their source is then the service of the topic's domain). The
 * entity is the record's key (the partition key). A record that is no event (no UUID eventId, no
 * type, no tenant) is not delivered to anyone.
 */
export const eventOfRecord = (topic: string, record: LogRecord): EventView | null => {
  const v = decodeEvent(record.value, { source: platformSourceOf(topic) });
  if (!v || !UUID.test(v.eventId)) return null;
  return {
    eventId: v.eventId.toLowerCase(),
    type: v.type,
    tenantId: v.tenantId,
    source: v.source,
    entityId: record.key,
    payload: v.payload,
    schemaVersion: v.schemaVersion,
    traceId: v.traceId,
    timestamp: isoOrNull(v.timestamp) ?? new Date(record.timestamp).toISOString(),
  };
};

/** an ISO time PostgreSQL can hold, normalized to UTC; null for anything else (a bad time must not stop the copy) */
const isoOrNull = (value: unknown): string | null => {
  if (typeof value !== 'string') return null;
  const t = Date.parse(value);
  return Number.isNaN(t) || t < -62_135_596_800_000 || t > 253_402_300_799_999 ? null : new Date(t).toISOString();
};
