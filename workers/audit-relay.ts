import type { AuditKernel } from '../infra/audit';
import { AUDIT_OUTBOX, AUDIT_TOPIC } from '../infra/audit';
import type { Config } from '../infra/config';
import type { OutgoingRecord } from '../infra/log/port';
import { Relay } from './relay';

interface OutboxRow {
  id: string;
  record: OutgoingRecord;
}

/**
 * The audit relay, a kernel worker beside the outbox relay (every process that runs workers runs
 * it, whatever services are installed): publishes the audit outbox — records committed with
 * business operations, and records acknowledged while the log was down — onto
 * platform.audit.events in insertion order, then deletes them (the relay core: workers/relay.ts).
 * It looks every AUDIT_RELAY_IDLE_MS (250 ms) and backs off up to AUDIT_REPLAY_INTERVAL_MS (30 s)
 * while the log refuses; a publish has a deadline (5 s), after which the same records are
 * published again.
 */
export const auditRelay = (
  kernel: AuditKernel,
  options: { batchSize: number; publishTimeoutMs: number; idleMs: number; maxBackoffMs: number },
): Relay<OutboxRow> =>
  new Relay(
    kernel.db,
    kernel.log,
    kernel.logger,
    {
      name: 'audit.outbox-relay',
      read: async (limit) =>
        (await kernel.db.query<OutboxRow>(`SELECT id, record FROM ${AUDIT_OUTBOX} ORDER BY id LIMIT $1`, [limit])).rows,
      recordOf: (r) => ({ topic: AUDIT_TOPIC, record: r.record }),
      async done(rows) {
        await kernel.db.query(`DELETE FROM ${AUDIT_OUTBOX} WHERE id = ANY($1::bigint[])`, [rows.map((r) => r.id)]);
      },
    },
    {
      ...options,
      failure: { message: 'audit relay cannot publish the outbox; retrying', every: 20 },
      published: 'audit records relayed from the outbox',
    },
  );

export const startAuditRelay = (kernel: AuditKernel & { config: Config }): Relay<OutboxRow> =>
  auditRelay(kernel, {
    batchSize: 500,
    publishTimeoutMs: 5000,
    idleMs: kernel.config.AUDIT_RELAY_IDLE_MS,
    maxBackoffMs: kernel.config.AUDIT_REPLAY_INTERVAL_MS,
  }).start();

/**
 * Publishes one batch of the audit outbox unless another relay holds its lock (tests, and a
 * replay by hand); returns how many records it published.
 */
export const relayAuditOutbox = async (kernel: AuditKernel, batchSize = 500, publishTimeoutMs = 5000) => {
  const relay = auditRelay(kernel, { batchSize, publishTimeoutMs, idleMs: 250, maxBackoffMs: 30_000 });
  try {
    return (await relay.lead()) ? await relay.runOnce() : 0;
  } finally {
    await relay.stop();
  }
};
