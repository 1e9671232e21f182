import { createHmac } from 'node:crypto';
import type { EventView } from '../../domain/events/views';
import type { AttemptOutcome } from '../../domain/events/delivery';
import { errorText } from '../../domain/events/delivery';

/**
 * A webhook delivery to a module's endpoint: one event per POST, signed like Stripe's webhooks so
 * a module can verify it and refuse replays:
 *   X-Platform-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(webhook secret, "<t>.<body>")>
 * with the webhook secret shown when the module's key was issued (X-Platform-Key-Id names the key).
 * A 2xx answer is success; anything else (another status, a redirect, a timeout) is a failed attempt.
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

export const deliverWebhook = async (
  http: typeof fetch,
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
    const response = await http(d.endpoint, {
      method: 'POST',
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
      headers: {
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
      },
    });
    if (response.status >= 200 && response.status < 300) {
      await response.body?.cancel().catch(() => undefined);
      return { ok: true };
    }
    const text = await response.text().catch(() => '');
    return { ok: false, error: errorText(`HTTP ${response.status}${text ? `: ${text.slice(0, 200)}` : ''}`) };
  } catch (error) {
    const e = error as Error & { cause?: { code?: string } };
    return {
      ok: false,
      error: errorText(
        e.name === 'TimeoutError'
          ? `no answer within ${timeoutMs} ms`
          : `${e.message}${e.cause?.code ? ` (${e.cause.code})` : ''}`,
      ),
    };
  }
};
