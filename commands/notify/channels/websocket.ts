import { z } from 'zod';
import type { Kernel } from '../../../infra/kernel';
import type { SocketPayload } from '../../../infra/notify/socket-bus';
import { socketBus } from '../../../infra/notify/socket-bus';
import type { ChannelAdapter, DeliveryJob } from './adapter';
import { failure } from './adapter';

export const socketPayloadOf = (job: DeliveryJob): SocketPayload => ({
  type: 'notification',
  notification_id: job.notificationId,
  subject: job.message.subject,
  body: job.message.text,
  format: job.message.format,
  priority: job.priority,
  data: job.message.data,
  created_at: job.createdAt,
});

/**
 * Real time: the message is written to the user's replay buffer (kept an hour) and published to
 * every process serving sockets, which pass it to the user's open connections. Delivered means
 * buffered and published — a user offline now receives it on reconnecting within the hour.
 */
export const websocketAdapter = (kernel: Kernel): ChannelAdapter => ({
  type: 'websocket',
  recipients: ['userId'],
  config: z.object({}).strict(),
  secretFields: [],
  async send(job) {
    const userId = job.message.userId;
    if (!userId) return failure('the websocket channel delivers to a user (recipient.userId)', true);
    const payload = socketPayloadOf(job);
    try {
      // a second attempt finds the row of the first: the same seq is published again (clients dedupe by notification_id)
      const { rows } = await kernel.db.query<{ seq: string }>(
        `INSERT INTO notify.socket_buffer (queued_seq, tenant_id, user_id, notification_id, payload, created_at) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (tenant_id, notification_id) DO UPDATE SET payload = notify.socket_buffer.payload RETURNING seq`,
        [job.queuedSeq, job.tenantId, userId, job.notificationId, JSON.stringify(payload), kernel.clock.now()],
      );
      await socketBus(kernel).publish({
        tenantId: job.tenantId,
        userId,
        seq: Number(rows[0]!.seq),
        notificationId: job.notificationId,
        payload,
      });
      return { ok: true };
    } catch (error) {
      return failure(error, false);
    }
  },
});
