import { z } from 'zod';
import type { Kernel } from '../../../infra/kernel';
import type { SocketPayload } from '../../../projections/notify/shared/socket-bus';
import { socketBus } from '../../../projections/notify/shared/socket-bus';
import type { ChannelAdapter, DeliveryJob, DeliveryOutcome } from './adapter';
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
 * Real time: the messages are written to their users' replay buffers (kept an hour) and published
 * to every process serving sockets, which pass them to the users' open connections. Delivered
 * means buffered and published — a user offline now receives it on reconnecting within the hour.
 * A claimed batch goes out together: one INSERT for all its messages and one publish.
 */
const sendAll = async (kernel: Kernel, jobs: readonly DeliveryJob[]): Promise<DeliveryOutcome[]> => {
  const toUsers = jobs.filter((job) => job.message.userId);
  let sent: DeliveryOutcome = { ok: true };
  if (toUsers.length) {
    const payloads = toUsers.map(socketPayloadOf);
    try {
      // a second attempt finds the row of the first: the same seq is published again (clients dedupe by notification_id)
      const { rows } = await kernel.db.query<{ notification_id: string; seq: string }>(
        `INSERT INTO notify.socket_buffer (queued_seq, tenant_id, user_id, notification_id, payload, created_at)
         SELECT q, t, u, n, p, $6 FROM unnest($1::bigint[], $2::text[], $3::text[], $4::uuid[], $5::jsonb[]) AS x(q, t, u, n, p)
         ON CONFLICT (tenant_id, notification_id) DO UPDATE SET payload = notify.socket_buffer.payload RETURNING notification_id, seq`,
        [
          toUsers.map((job) => job.queuedSeq),
          toUsers.map((job) => job.tenantId),
          toUsers.map((job) => job.message.userId),
          toUsers.map((job) => job.notificationId),
          payloads.map((payload) => JSON.stringify(payload)),
          kernel.clock.now(),
        ],
      );
      const seqOf = new Map(rows.map((r) => [r.notification_id, Number(r.seq)]));
      await socketBus(kernel).publish(
        toUsers.map((job, i) => ({
          tenantId: job.tenantId,
          userId: job.message.userId!,
          seq: seqOf.get(job.notificationId)!,
          notificationId: job.notificationId,
          payload: payloads[i]!,
        })),
      );
    } catch (error) {
      sent = failure(error, false);
    }
  }
  return jobs.map((job) =>
    job.message.userId ? sent : failure('the websocket channel delivers to a user (recipient.userId)', true),
  );
};

export const websocketAdapter = (kernel: Kernel): ChannelAdapter => ({
  type: 'websocket',
  recipients: ['userId'],
  config: z.object({}).strict(),
  secretFields: [],
  send: async (job) => (await sendAll(kernel, [job]))[0]!,
  sendMany: (jobs) => sendAll(kernel, jobs),
});
