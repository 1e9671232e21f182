import { z } from 'zod';
import type { Kernel } from '../../../infra/kernel';
import type { BoundStatement } from '../../../infra/postgres/inline';
import type { SocketEnvelope, SocketPayload } from '../../../projections/notify/shared/socket-bus';
import { socketBus } from '../../../projections/notify/shared/socket-bus';
import type { ChannelAdapter, DeliveryJob, DeliveryOutcome } from './adapter';
import { failure } from './adapter';

export const socketPayloadOf = (
  job: Pick<DeliveryJob, 'notificationId' | 'message' | 'priority' | 'createdAt'>,
): SocketPayload => ({
  type: 'notification',
  notification_id: job.notificationId,
  subject: job.message.subject,
  body: job.message.text,
  format: job.message.format,
  priority: job.priority,
  data: job.message.data,
  created_at: job.createdAt,
});

/** one message for a user's replay buffer */
export interface BufferEntry {
  /** the queue's acceptance order; null: one drawn now from the queue's sequence (a message that skips the queue) */
  queuedSeq: number | null;
  tenantId: string;
  userId: string;
  notificationId: string;
  payload: SocketPayload;
}

/**
 * The buffer rows of many messages in one statement, in the array's order (their seq, the order a
 * replay takes), answering each one's seq. A second attempt finds the row of the first: the same
 * seq is published again (clients dedupe by notification_id).
 */
export const bufferInsert = (entries: readonly BufferEntry[], now: Date): BoundStatement => ({
  text: `INSERT INTO notify.socket_buffer (queued_seq, tenant_id, user_id, notification_id, payload, created_at)
         SELECT coalesce(q, nextval(pg_get_serial_sequence('notify.deliveries', 'seq'))), t, u, n, p, $6
           FROM unnest($1::bigint[], $2::text[], $3::text[], $4::uuid[], $5::jsonb[]) AS x(q, t, u, n, p)
         ON CONFLICT (tenant_id, notification_id) DO UPDATE SET payload = notify.socket_buffer.payload RETURNING notification_id, seq`,
  values: [
    entries.map((e) => e.queuedSeq),
    entries.map((e) => e.tenantId),
    entries.map((e) => e.userId),
    entries.map((e) => e.notificationId),
    entries.map((e) => JSON.stringify(e.payload)),
    now,
  ],
});

/** the bus's envelopes of buffered messages, given the seqs bufferInsert answered */
export const envelopesOf = (
  entries: readonly BufferEntry[],
  rows: readonly { notification_id: string; seq: string }[],
): SocketEnvelope[] => {
  const seqOf = new Map(rows.map((r) => [r.notification_id, Number(r.seq)]));
  return entries.map((e) => ({
    tenantId: e.tenantId,
    userId: e.userId,
    seq: seqOf.get(e.notificationId)!,
    notificationId: e.notificationId,
    payload: e.payload,
  }));
};

/**
 * Real time: the messages are written to their users' replay buffers (kept an hour) and published
 * to every process serving sockets, which pass them to the users' open connections. Delivered
 * means buffered and published — a user offline now receives it on reconnecting within the hour.
 * A claimed batch goes out together: one INSERT for all its messages and one publish. (Most
 * websocket notifications never reach this: they are delivered in their accepting transaction,
 * commands/notify/live.ts; this is the queue's path for the rest.)
 */
const sendAll = async (kernel: Kernel, jobs: readonly DeliveryJob[]): Promise<DeliveryOutcome[]> => {
  const entries: BufferEntry[] = jobs.flatMap((job) =>
    job.message.userId
      ? [
          {
            queuedSeq: job.queuedSeq,
            tenantId: job.tenantId,
            userId: job.message.userId,
            notificationId: job.notificationId,
            payload: socketPayloadOf(job),
          },
        ]
      : [],
  );
  let sent: DeliveryOutcome = { ok: true };
  if (entries.length) {
    try {
      const { text, values } = bufferInsert(entries, kernel.clock.now());
      const { rows } = await kernel.db.query<{ notification_id: string; seq: string }>(text, values);
      await socketBus(kernel).publish(envelopesOf(entries, rows));
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
