import { z } from 'zod';
import { JsonObject } from '../shared/json';
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
const ApiCalled = z.object({
  type: z.literal(API_CALLED),
  eventId: z.string().min(1),
  tenantId: z.string().nullable(),
  actorId: z.string().nullable(),
  traceId: z.string().nullable(),
  occurredAt: z.string().min(1),
  data: z.object({
    method: z.string(),
    route: z.string().nullable(),
    status: z.number(),
    latencyMs: z.number(),
    clientAddress: z.string().nullish(),
    userAgent: z.string().nullish(),
  }),
});
const Envelope = z.discriminatedUnion('type', [RecordCreated, ApiCalled]);

/** the record an event of platform.audit.events carries; null for a type the store does not keep or a malformed value */
export const recordOfAuditEvent = (value: string): NewAuditRecord | null => {
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch {
    return null;
  }
  const parsed = Envelope.safeParse(json);
  if (!parsed.success) return null;
  const e = parsed.data;
  if (e.type === AUDIT_RECORD_CREATED) return e.data;
  // anonymous requests (no token, a refused one) belong to the platform: its owner reads them
  return {
    id: e.eventId,
    tenantId: e.tenantId ?? PLATFORM_TENANT_ID,
    action: API_CALLED,
    entityType: 'route',
    entityId: `${e.data.method} ${e.data.route ?? '(no route)'}`,
    actorId: e.actorId ?? 'anonymous',
    actorIp: e.data.clientAddress ?? null,
    actorUserAgent: e.data.userAgent ?? null,
    meta: { method: e.data.method, route: e.data.route, status: e.data.status, latencyMs: e.data.latencyMs },
    traceId: e.traceId,
    timestamp: e.occurredAt,
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
