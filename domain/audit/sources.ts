import { z } from 'zod';
import { JsonObject } from '../shared/json';
import type { PlatformEvent } from '../shared/envelope';
import type { StoredEvent } from '../shared/event';
import { entityIdOf } from '../shared/event';
import { PLATFORM_TENANT_ID } from '../identity/constants';
import type { NewAuditRecord } from './record';

/**
 * Where audit records come from, mapped to the one record shape (spec 002 "Audit record"):
 * audit.record.created (a service's record), audit.api.called (the gateway's record of a request)
 * and every domain event of the global log (the audit view of the domain).
 */
export const AUDIT_RECORD_CREATED = 'audit.record.created';
export const API_CALLED = 'audit.api.called';

const Json = JsonObject;
/** a service's audit record (spec 002 "Audit record"), the payload of audit.record.created */
const RecordCreated = z.object({
  type: z.literal(AUDIT_RECORD_CREATED),
  data: z.object({
    id: z.string().min(1),
    action: z.string().min(1),
    entityType: z.string().min(1),
    entityId: z.string().min(1),
    actorId: z.string().min(1),
    actorIp: z.string().nullish(),
    actorUserAgent: z.string().nullish(),
    tenantId: z.string().min(1),
    before: Json.nullish(),
    after: Json.nullish(),
    meta: Json.nullish(),
    traceId: z.string().nullish(),
    timestamp: z.string().min(1),
  }),
});
/** the gateway's record of a request (gateway/audit.ts), the payload of audit.api.called */
const ApiCalled = z.object({
  type: z.literal(API_CALLED),
  data: z.object({
    method: z.string(),
    route: z.string().nullable(),
    status: z.number(),
    latencyMs: z.number(),
    actorId: z.string().nullish(),
    clientAddress: z.string().nullish(),
    userAgent: z.string().nullish(),
  }),
});
/** what platform.audit.events carries (the topic's schema is derived from it: domain/events/platform-events.ts) */
export const AuditEvent = z.discriminatedUnion('type', [RecordCreated, ApiCalled]);

/** the record an Event of platform.audit.events carries; null for a type the store does not keep or a malformed payload */
export const recordOfAuditEvent = (event: PlatformEvent): NewAuditRecord | null => {
  const parsed = AuditEvent.safeParse({ type: event.type, data: event.payload });
  if (!parsed.success) return null;
  const e = parsed.data;
  if (e.type === AUDIT_RECORD_CREATED) return e.data;
  // anonymous requests (no token, a refused one) belong to the platform: its owner reads them
  return {
    id: event.eventId,
    tenantId: event.tenantId,
    action: API_CALLED,
    entityType: 'route',
    entityId: `${e.data.method} ${e.data.route ?? '(no route)'}`,
    actorId: e.data.actorId ?? 'anonymous',
    actorIp: e.data.clientAddress ?? null,
    actorUserAgent: e.data.userAgent ?? null,
    meta: { method: e.data.method, route: e.data.route, status: e.data.status, latencyMs: e.data.latencyMs },
    traceId: event.traceId,
    timestamp: event.timestamp,
  };
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `previousEmail: a` → `{ email: a }`: the prior values an event names, as the record's before */
const previousValues = (data: Record<string, unknown>): Record<string, unknown> | null => {
  const entries = Object.entries(data)
    .filter(([k]) => /^previous[A-Z]/.test(k))
    .map(([k, v]) => [k[8]!.toLowerCase() + k.slice(9), v] as const);
  return entries.length ? Object.fromEntries(entries) : null;
};

/** the tenant whose audit log a domain event belongs to (see recordOfDomainEvent) */
export const tenantOfDomainEvent = (e: Pick<StoredEvent<Record<string, unknown>>, 'tenantId' | 'data'>): string => {
  const named = isObject(e.data) ? e.data.tenantId : undefined;
  return e.tenantId === PLATFORM_TENANT_ID && typeof named === 'string' && named !== '' ? named : e.tenantId;
};

/**
 * The audit record of a domain event: action = its type; entity = its stream (aggregate name's last
 * segment, entity id); actor and trace from its envelope; before/after = the event's own
 * before/after members when it has them, otherwise after = its payload and before = the prior values
 * it names (previousX). Account events live in the platform pseudo-tenant: when one names the tenant
 * it happened in (a login, a sign-up), the record belongs to that tenant.
 */
export const recordOfDomainEvent = (e: StoredEvent<Record<string, unknown>>): NewAuditRecord => {
  const data = isObject(e.data) ? e.data : {};
  const tenantId = tenantOfDomainEvent(e);
  const aggregate = e.streamId.slice(0, e.streamId.indexOf(':'));
  const { before: ownBefore, after: ownAfter, ...rest } = data;
  const meta = Object.fromEntries(
    Object.entries({
      streamVersion: e.streamVersion,
      schemaVersion: e.schemaVersion,
      correlationId: e.correlationId,
      causationId: e.causationId,
    }).filter(([, v]) => v !== null && v !== undefined),
  );
  return {
    id: e.eventId,
    tenantId,
    action: e.type,
    entityType: aggregate.split('.').pop() || aggregate,
    entityId: entityIdOf(e.streamId),
    actorId: e.actorId ?? 'system',
    actorIp: null,
    actorUserAgent: null,
    before: isObject(ownBefore) ? ownBefore : previousValues(rest),
    after: isObject(ownAfter) ? ownAfter : rest,
    meta,
    traceId: e.traceId,
    timestamp: e.occurredAt,
  };
};
