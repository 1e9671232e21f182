import { NO_TENANT } from '../domain/shared/envelope';
import { eventRecord } from '../infra/events/envelope';
import { hostWide } from '../infra/http/host';
import type { Kernel } from '../infra/kernel';
import type { OutgoingRecord } from '../infra/log/port';
import { UNLIMITED } from './edge';

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

/**
 * The API-call audit of the edge (spec 000 behaviour rule 9). The record is durable before the
 * answer leaves (DESIGN.md mechanism 10): published on the log, or staged in the audit outbox, with
 * the calls answered at the same moment (group commit). One that neither could take is logged as
 * lost; the answer still goes out — what the request did is done, and refusing it now would only
 * invite a retry.
 */
export const apiCallAudit = (kernel: Kernel) =>
  hostWide(async (app) => {
    const recorder = kernel.audit;
    app.addHook('onSend', async (request, reply, payload) => {
      if (UNLIMITED.has(request.routeOptions.url ?? '')) return payload;
      const p = request.principal;
      const userAgent = request.headers['user-agent'];
      try {
        await recorder.record(
          toAuditRecord(
            {
              method: request.method,
              route: request.routeOptions.url ?? null,
              status: reply.statusCode,
              latencyMs: Math.round(reply.elapsedTime * 1000) / 1000,
              actorId: p ? (p.impersonatorId ? `${p.userId} (by ${p.impersonatorId})` : p.userId) : null,
              tenantId: p?.tenantId ?? null,
              clientAddress: request.ip ?? null, // undefined once the client has gone
              userAgent: typeof userAgent === 'string' ? userAgent : null,
              traceId: request.id,
              occurredAt: kernel.clock.now().toISOString(),
            },
            kernel.ids.next(),
          ),
        );
      } catch (error) {
        request.log.error({ err: error }, 'API-call audit record lost: neither the log nor the audit outbox took it');
      }
      return payload;
    });
    app.addHook('onClose', () => recorder.flush());
  });
