import { relayAuditOutbox } from '../infra/audit';
import type { Kernel } from '../infra/kernel';
import type { Loop } from './loop';
import { startLoop } from './loop';

/**
 * The audit relay, a kernel worker beside the outbox relay (every process that runs workers runs
 * it, whatever services are installed): publishes the audit outbox — records committed with
 * business operations, and records acknowledged while the log was down — onto
 * platform.audit.events, looking every AUDIT_RELAY_IDLE_MS (250 ms) and backing off up to
 * AUDIT_REPLAY_INTERVAL_MS (30 s) while the log refuses; a full batch is followed at once by the
 * next. One relay per database works at a time (relayAuditOutbox takes a session advisory lock).
 */
export class AuditRelay {
  private loop: Loop | null = null;

  constructor(private readonly kernel: Kernel) {}

  start(): this {
    const { kernel } = this;
    this.loop = startLoop(
      async () => {
        const n = await relayAuditOutbox(kernel);
        if (n > 0) kernel.logger.debug({ relayed: n }, 'audit records relayed from the outbox');
        return n >= 500;
      },
      {
        idleMs: kernel.config.AUDIT_RELAY_IDLE_MS,
        maxBackoffMs: kernel.config.AUDIT_REPLAY_INTERVAL_MS,
        onError: (error, failures) => {
          if (failures === 1 || failures % 20 === 0)
            kernel.logger.warn({ err: error, failures }, 'audit relay cannot publish the outbox; retrying');
        },
      },
    );
    return this;
  }

  async stop(): Promise<void> {
    await this.loop?.stop();
  }
}
