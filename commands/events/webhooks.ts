import { context, propagation } from '@opentelemetry/api';
import { createHmac } from 'node:crypto';
import type { EventView } from '../../domain/events/views';
import type { AttemptOutcome } from '../../domain/events/delivery';
import { errorText } from '../../domain/events/delivery';
import type { HttpPost } from '../../infra/http/post-client';
import { outboundFailureText } from '../../infra/security/outbound';

/**
 * A webhook delivery to a module's endpoint: one event per POST, signed like Stripe's webhooks so
 * a module can verify it and refuse replays:
 *   X-Platform-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(webhook secret, "<t>.<body>")>
 * with the webhook secret shown when the module's key was issued (X-Platform-Key-Id names the key).
 * A 2xx answer is success; anything else (another status, a redirect, a timeout) is a failed attempt.
 * The connection goes through the outbound guard (`post` is made by createHttpPost): an endpoint
 * that is, or has come to resolve to, an inside address fails with "destination refused by policy".
 */
export interface Delivery {
  endpoint: string;
  secret: string | null;
  keyId: string | null;
  subscriptionId: string;
  consumerGroup: string;
  handlerName: string;
  attempt: number;
  event: EventView;
}

export const signature = (secret: string, timestamp: number, body: string): string =>
  `t=${timestamp},v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;

const traceHeaders = (): Record<string, string> => {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
};

export const deliverWebhook = async (
  post: HttpPost,
  d: Delivery,
  nowMs: number,
  timeoutMs: number,
): Promise<AttemptOutcome> => {
  if (!d.secret || !d.keyId) return { ok: false, error: 'the module has no active key to sign its deliveries with' };
  const body = JSON.stringify({
    subscriptionId: d.subscriptionId,
    consumerGroup: d.consumerGroup,
    handlerName: d.handlerName,
    attempt: d.attempt,
    event: d.event,
  });
  try {
    const answer = await post(
      d.endpoint,
      body,
      {
        'content-type': 'application/json',
        'user-agent': 'platform-events/1',
        'x-event-id': d.event.eventId,
        'x-event-type': d.event.type,
        'x-tenant-id': d.event.tenantId,
        'x-subscription-id': d.subscriptionId,
        'x-handler-name': d.handlerName,
        'x-delivery-attempt': String(d.attempt),
        'x-platform-key-id': d.keyId,
        'x-platform-signature': signature(d.secret, Math.floor(nowMs / 1000), body),
        // W3C context of the delivery's span, when traced: the module's handler continues the trace
        ...traceHeaders(),
      },
      timeoutMs,
    );
    if (answer.status >= 200 && answer.status < 300) return { ok: true };
    return {
      ok: false,
      error: errorText(`HTTP ${answer.status}${answer.text ? `: ${answer.text.slice(0, 200)}` : ''}`),
    };
  } catch (error) {
    // the tenant reads lastError: a category only; the socket's own words (addresses, ports) go to the log
    return {
      ok: false,
      error: outboundFailureText(error),
      detail: errorText(error instanceof Error ? error.message : String(error)),
    };
  }
};
