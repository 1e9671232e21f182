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

/** The wire form: the platform's event envelope, keyed by tenant so one tenant's calls keep their order. */
export const toAuditRecord = (call: ApiCall, eventId: string): OutgoingRecord => ({
  key: call.tenantId ?? '-',
  value: JSON.stringify({
    eventId,
    type: API_CALLED,
    schemaVersion: 1,
    tenantId: call.tenantId,
    actorId: call.actorId,
    traceId: call.traceId,
    causationId: null,
    correlationId: call.traceId,
    occurredAt: call.occurredAt,
    entityId: call.traceId,
    data: {
      method: call.method,
      route: call.route,
      status: call.status,
      latencyMs: call.latencyMs,
      clientAddress: call.clientAddress,
      userAgent: call.userAgent,
    },
  }),
  headers: { eventId, type: API_CALLED, ...(call.tenantId ? { tenantId: call.tenantId } : {}), traceId: call.traceId },
  timestamp: Date.parse(call.occurredAt),
});
