import { z } from 'zod';

/**
 * The one envelope of every record on every platform.<domain>.events topic: spec 002's Event, and
 * nothing else in the record's value. What the kernel also knows of an event (actor, causation,
 * correlation, stream and version) travels in the record's headers (EventHeaders), so a consumer
 * that reads the spec's Event reads exactly it. One encoder and one decoder (infra/events/envelope.ts)
 * write and read it for the outbox relay, the bus, the audit pipeline and every consumer.
 */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

export const PlatformEvent = z.object({
  /** UUID v7; receivers deduplicate by it */
  eventId: z.string().regex(UUID),
  /** domain.entity.verb */
  type: z.string().min(1),
  /** the publishing module's slug, `app` for users, or the platform service of the domain */
  source: z.string().min(1),
  tenantId: z.string().min(1),
  traceId: z.string().min(1),
  /** ISO 8601, UTC */
  timestamp: z.string().min(1),
  /** semver */
  schemaVersion: z.string().regex(SEMVER),
  payload: z.record(z.string(), z.unknown()),
});
export type PlatformEvent = z.infer<typeof PlatformEvent>;

/** the record headers of an event on the log: the Event's ids, and the kernel's provenance when it has one */
export interface EventHeaders {
  eventId: string;
  type: string;
  tenantId: string;
  source: string;
  /** only when a request traced it (the Event's traceId is never empty: see traceIdOf) */
  traceId?: string;
  /** the span that appended it, when a sampled trace did (a consumer's spans continue that trace) */
  spanId?: string;
  actorId?: string;
  causationId?: string;
  correlationId?: string;
  /** events of the event store: their stream and version within it */
  streamId?: string;
  streamVersion?: string;
}

/**
 * identity's platform pseudo-tenant (domain/identity/constants.ts PLATFORM_TENANT_ID): the tenant of
 * an event that belongs to no tenant (an anonymous request's record). Repeated here because the edge
 * may import domain/shared only; tests/unit/events/envelope.spec.ts checks they agree.
 */
export const NO_TENANT = '00000000-0000-0000-0000-000000000000';

/** the event store's integer schema versions as the Event's semver */
export const semverOf = (version: number): string => `${Number.isInteger(version) && version > 0 ? version : 1}.0.0`;
/** the major version of a semver (the event store's integer version) */
export const majorOf = (semver: string): number => Number(semver.split('.')[0]) || 1;

/**
 * The Event's traceId is a string (spec 002): the request's trace when one caused the event, else
 * its correlation, else a trace of its own — the event id's 32 hex digits, a valid W3C trace id.
 */
export const traceIdOf = (e: { eventId: string; traceId?: string | null; correlationId?: string | null }): string =>
  e.traceId || e.correlationId || e.eventId.replace(/-/g, '').toLowerCase();
