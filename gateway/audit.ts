import { NO_TENANT } from '../domain/shared/envelope';
import { eventRecord } from '../infra/events/envelope';
import type { OutgoingRecord } from '../infra/log/port';

export const API_CALLED = 'audit.api.called';

/** what the gateway records of every request (spec 000 behaviour rule 9) */
export interface ApiCall {
  method: string;
  /** the route template (/v1/tally/counters/:id), or null when no route matched */
  route: string | null;
  status: number;
  latencyMs: number;
  actorId: string | null;
  tenantId: string | null;
  clientAddress: string | null;
  userAgent: string | null;
  traceId: string;
  occurredAt: string;
}

/**
 * The wire form: the platform's Event (infra/events/envelope.ts), keyed by tenant so one tenant's
 * calls keep their order; an anonymous call belongs to no tenant (NO_TENANT, the platform's).
 */
export const toAuditRecord = (call: ApiCall, eventId: string): OutgoingRecord =>
  eventRecord(
    {
      eventId,
      type: API_CALLED,
      source: 'gateway',
      tenantId: call.tenantId ?? NO_TENANT,
      traceId: call.traceId,
      timestamp: call.occurredAt,
      schemaVersion: '1.0.0',
      payload: {
        method: call.method,
        route: call.route,
        status: call.status,
        latencyMs: call.latencyMs,
        actorId: call.actorId,
        clientAddress: call.clientAddress,
        userAgent: call.userAgent,
      },
    },
    call.tenantId ?? '-',
    { traceId: call.traceId, ...(call.actorId ? { actorId: call.actorId } : {}) },
  );
