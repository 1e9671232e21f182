import type { Agent } from 'node:https';
import { z } from 'zod';
import type { Kernel } from '../../../infra/kernel';
import type { Priority } from '../../../domain/notify/priority';
import type { VapidKeys } from '../../../projections/notify/shared/vapid';
import type { ChannelAdapter, DeliveryJob, DeliveryMessage } from './adapter';
import { failure } from './adapter';
import { outboundFailureText } from '../../../infra/security/outbound';
import { lazyImport } from '../../../infra/runtime/lazy';

// loaded on the first push delivery, not at every process's start
const loadWebPush = lazyImport(async () => (await import('web-push')).default);

/** RFC 8291 carries at most 4,096 bytes per record; aes128gcm leaves 3,993 for the plaintext after padding and header */
export const PUSH_PAYLOAD_MAX_BYTES = 3_900;

const URGENCY: Record<Priority, 'low' | 'normal' | 'high'> = {
  low: 'low',
  normal: 'normal',
  high: 'high',
  critical: 'high',
};

export const pushPayloadOf = (notificationId: string, message: DeliveryMessage, priority: Priority): string =>
  JSON.stringify({
    notification_id: notificationId,
    title: message.subject,
    body: message.text,
    priority,
    data: message.data,
  });

const PushConfig = z
  .object({
    vapidPublicKey: z.string().regex(/^[A-Za-z0-9_-]{86,88}$/, 'the uncompressed P-256 public key, base64url'),
    vapidPrivateKey: z.string().regex(/^[A-Za-z0-9_-]{42,44}$/, 'the 32-byte private key, base64url'),
    subject: z.string().regex(/^(mailto:|https:\/\/)\S+$/, 'a mailto: or https: URL'),
  })
  .strict();

/** what the tenant reads of a failed push: the push service's status, or a category of the connection's failure */
const pushFailureText = (error: Error): string => {
  const status = (error as { statusCode?: unknown }).statusCode;
  return `push service: ${typeof status === 'number' ? `HTTP ${status}` : outboundFailureText(error)}`;
};

interface PushSubscription {
  endpoint: string;
  p256dh: string;
  auth: string;
}

export interface PushOptions {
  /** the platform's VAPID keys and subject (a registered push channel brings its own) */
  vapid: () => { keys: VapidKeys; subject: string };
  attemptTimeoutMs: () => number;
  /** the HTTPS agent for push services: the outbound guard's (a subscription's endpoint is the browser's, not ours) */
  agent: () => Agent;
}

/**
 * Browser push (Web Push, RFC 8030/8291/8292 through the web-push library): the payload is
 * encrypted for each of the user's subscriptions (aes128gcm) and posted to its push service with
 * a VAPID JWT. A subscription the service no longer knows (404, 410) is deleted; the attempt
 * succeeds when one subscription accepted it.
 */
export const pushAdapter = (kernel: Kernel, options: PushOptions): ChannelAdapter => ({
  type: 'push',
  recipients: ['userId'],
  config: PushConfig,
  secretFields: ['vapidPrivateKey'],
  check: (message) =>
    Buffer.byteLength(pushPayloadOf('00000000-0000-0000-0000-000000000000', message, 'normal')) > PUSH_PAYLOAD_MAX_BYTES
      ? {
          field: 'body',
          message: `a push message holds at most ${PUSH_PAYLOAD_MAX_BYTES} bytes of subject, body and meta`,
          code: 'PUSH_PAYLOAD_TOO_LARGE',
        }
      : null,
  async send(job: DeliveryJob) {
    const userId = job.message.userId;
    if (!userId) return failure('the push channel delivers to a user (recipient.userId)', true);
    const { rows } = await kernel.db.query<PushSubscription>(
      'SELECT endpoint, p256dh, auth FROM notify.push_subscriptions WHERE tenant_id = $1 AND user_id = $2 ORDER BY created_at',
      [job.tenantId, userId],
    );
    if (rows.length === 0) return failure('the user has no push subscription', true);
    const platform = options.vapid();
    const own = job.channel.id ? PushConfig.parse(job.channel.config) : null;
    const vapidDetails = own
      ? { subject: own.subject, publicKey: own.vapidPublicKey, privateKey: own.vapidPrivateKey }
      : { subject: platform.subject, publicKey: platform.keys.publicKey, privateKey: platform.keys.privateKey };
    const payload = pushPayloadOf(job.notificationId, job.message, job.priority);
    const agent = options.agent();
    const webpush = await loadWebPush();
    const results = await Promise.all(
      rows.map(async (s) => {
        try {
          await webpush.sendNotification({ endpoint: s.endpoint, keys: { p256dh: s.p256dh, auth: s.auth } }, payload, {
            vapidDetails,
            TTL: 86_400,
            urgency: URGENCY[job.priority],
            contentEncoding: 'aes128gcm',
            timeout: options.attemptTimeoutMs(),
            headers: { 'X-Notification-Id': job.notificationId },
            agent,
          });
          return 'sent' as const;
        } catch (error) {
          const status = (error as { statusCode?: number }).statusCode;
          if (status === 404 || status === 410) {
            await kernel.db.query('DELETE FROM notify.push_subscriptions WHERE tenant_id = $1 AND endpoint = $2', [
              job.tenantId,
              s.endpoint,
            ]);
            return 'gone' as const;
          }
          return error instanceof Error ? error : new Error(String(error));
        }
      }),
    );
    if (results.includes('sent')) return { ok: true };
    const errors = results.filter((r): r is Error => r instanceof Error);
    if (errors.length === 0) return failure('every push subscription of the user has expired', true);
    kernel.logger.warn(
      { err: errors[0], tenantId: job.tenantId, notificationId: job.notificationId, failed: errors.length },
      'push delivery attempt failed',
    );
    return failure(pushFailureText(errors[0]!), false);
  },
});
