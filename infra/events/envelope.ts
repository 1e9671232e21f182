import type { EventHeaders } from '../../domain/shared/envelope';
import { majorOf, NO_TENANT, PlatformEvent, semverOf, traceIdOf } from '../../domain/shared/envelope';
import type { StoredEvent } from '../../domain/shared/event';
import { stringifyJson } from '../http/json';
import type { LogRecord, OutgoingRecord } from '../log/port';

/**
 * The one encoder and decoder of the platform's Event (domain/shared/envelope.ts) on the log. The
 * value is the spec's Event exactly, members in the spec's order; the payload may hold JsonNumber
 * (integers written digit for digit, beyond 2^53 too) and RawJson (an object kept as its client
 * wrote it), which stringifyJson writes verbatim.
 */
export const encodeEvent = (event: PlatformEvent): string =>
  stringifyJson({
    eventId: event.eventId,
    type: event.type,
    source: event.source,
    tenantId: event.tenantId,
    traceId: event.traceId,
    timestamp: event.timestamp,
    schemaVersion: event.schemaVersion,
    payload: event.payload,
  });

/** an Event as a log record: keyed by its entity (the partition key), its ids and provenance in the headers */
export const eventRecord = (
  event: PlatformEvent,
  key: string,
  provenance: Omit<EventHeaders, 'eventId' | 'type' | 'tenantId' | 'source'> = {},
): OutgoingRecord => {
  const headers: Record<string, string> = {
    eventId: event.eventId,
    type: event.type,
    tenantId: event.tenantId,
    source: event.source,
  };
  for (const [name, value] of Object.entries(provenance)) if (value) headers[name] = value;
  return { key, value: encodeEvent(event), headers, timestamp: Date.parse(event.timestamp) };
};

/**
 * The Event a value holds; null for anything that is not one (a consumer skips it, never stops on
 * it). Records written before the envelope was the spec's (still on the log within its retention,
 * or waiting in an outbox) are read as Events too: `data` is the payload, the integer schemaVersion
 * its semver, occurredAt the timestamp, the actor a payload member when the payload names none.
 */
export const decodeEvent = (value: string, defaults: { source?: string } = {}): PlatformEvent | null => {
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch {
    return null;
  }
  const parsed = PlatformEvent.safeParse(json);
  if (parsed.success) return parsed.data;
  return legacyEvent(json, defaults.source);
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const legacyEvent = (v: unknown, source: string | undefined): PlatformEvent | null => {
  if (!isObject(v) || typeof v.type !== 'string' || typeof v.eventId !== 'string') return null;
  const body = v.payload ?? v.data ?? {};
  const payload: Record<string, unknown> = isObject(body) ? { ...body } : { value: body };
  if (typeof v.actorId === 'string' && !('actorId' in payload)) payload.actorId = v.actorId;
  const version = v.schemaVersion;
  const parsed = PlatformEvent.safeParse({
    eventId: v.eventId,
    type: v.type,
    source: typeof v.source === 'string' ? v.source : (source ?? v.type.split('.')[0]),
    tenantId: typeof v.tenantId === 'string' && v.tenantId !== '' ? v.tenantId : NO_TENANT,
    traceId: traceIdOf({
      eventId: v.eventId,
      traceId: typeof v.traceId === 'string' ? v.traceId : null,
      correlationId: typeof v.correlationId === 'string' ? v.correlationId : null,
    }),
    timestamp: typeof v.timestamp === 'string' ? v.timestamp : v.occurredAt,
    schemaVersion: typeof version === 'string' ? version : semverOf(Number(version)),
    payload,
  });
  return parsed.success ? parsed.data : null;
};

/**
 * An event of the event store as the outbox relay published it, read back (replay from the log into
 * a projection): the Event, and the provenance its headers carry. The payload is the wire form
 * (JSON numbers for amounts, objects for meta) unless storedPayload turns it back into the store's.
 */
export const storedEventOf = (
  record: LogRecord,
  /** the payload in the event store's form, from the record's exact text (domain/events/platform-events.ts storedPayloadOf) */
  storedPayload?: (type: string, text: string) => Record<string, unknown> | null,
): StoredEvent<Record<string, unknown>> | null => {
  const event = decodeEvent(record.value);
  if (!event) return null;
  // records from before the envelope carried the provenance in the value
  const h = record.headers.streamId ? record.headers : legacyProvenance(record.value);
  return {
    eventId: event.eventId,
    type: event.type,
    schemaVersion: majorOf(event.schemaVersion),
    tenantId: event.tenantId,
    actorId: h.actorId ?? null,
    traceId: h.traceId ?? null,
    spanId: h.spanId ?? null,
    causationId: h.causationId ?? null,
    correlationId: h.correlationId ?? null,
    occurredAt: event.timestamp,
    streamId: h.streamId ?? '',
    streamVersion: Number(h.streamVersion ?? 0),
    position: BigInt(record.offset),
    transactionId: 0n,
    data: storedPayload?.(event.type, record.value) ?? event.payload,
  };
};

const legacyProvenance = (value: string): Partial<Record<string, string>> => {
  const v = JSON.parse(value) as Record<string, unknown>;
  const out: Partial<Record<string, string>> = {};
  for (const name of ['actorId', 'traceId', 'causationId', 'correlationId', 'streamId', 'streamVersion'])
    if (typeof v[name] === 'string' || typeof v[name] === 'number') out[name] = String(v[name]);
  return out;
};
