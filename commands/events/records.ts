import { SEMVER } from '../../domain/modules/manifest';
import { platformSourceOf } from '../../domain/events/topics';
import type { EventView } from '../../domain/events/views';
import type { LogRecord } from '../../infra/log/port';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A log record as the bus's Event resource (spec 002, Event). Records of the bus (published through
 * POST /events/publish) carry source and payload; records the outbox relay publishes from the event
 * store carry data and an integer schemaVersion, and their source is the service of their domain.
 * A record that is no event (no UUID eventId, no type, no tenant) is not delivered to anyone.
 */
export const eventOfRecord = (topic: string, record: LogRecord): EventView | null => {
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(record.value) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null) return null;
  const { eventId, type, tenantId } = v;
  if (
    typeof eventId !== 'string' ||
    !UUID.test(eventId) ||
    typeof type !== 'string' ||
    typeof tenantId !== 'string' ||
    tenantId === ''
  )
    return null;
  const payload = (v.payload ?? v.data ?? {}) as Record<string, unknown>;
  const version = v.schemaVersion;
  return {
    eventId: eventId.toLowerCase(),
    type,
    tenantId,
    source: typeof v.source === 'string' ? v.source : platformSourceOf(topic),
    entityId: typeof v.entityId === 'string' ? v.entityId : record.key,
    payload: typeof payload === 'object' && payload !== null && !Array.isArray(payload) ? payload : { value: payload },
    schemaVersion:
      typeof version === 'string' && SEMVER.test(version)
        ? version
        : `${Number.isInteger(version) ? String(version) : '1'}.0.0`,
    traceId: typeof v.traceId === 'string' ? v.traceId : null,
    timestamp: isoOrNull(v.timestamp) ?? isoOrNull(v.occurredAt) ?? new Date(record.timestamp).toISOString(),
  };
};

/** an ISO time PostgreSQL can hold, normalized to UTC; null for anything else (a bad time must not stop the copy) */
const isoOrNull = (value: unknown): string | null => {
  if (typeof value !== 'string') return null;
  const t = Date.parse(value);
  return Number.isNaN(t) || t < -62_135_596_800_000 || t > 253_402_300_799_999 ? null : new Date(t).toISOString();
};
