import { purgeIdempotency } from '../infra/eventstore/idempotency';
import type { Kernel } from '../infra/kernel';
import type { Loop } from './loop';
import { startLoop } from './loop';

/** Periodic housekeeping: expired idempotency records, log records past retention. */
export class MaintenanceWorker {
  private loop: Loop | null = null;

  constructor(
    private readonly kernel: Kernel,
    private readonly intervalMs = 60_000,
  ) {}

  start(): this {
    this.loop = startLoop(
      async () => {
        const purged = await purgeIdempotency(this.kernel.db);
        const log = this.kernel.log as { purgeExpired?: () => Promise<number> };
        const expired = log.purgeExpired ? await log.purgeExpired() : 0;
        if (purged || expired) this.kernel.logger.info({ purged, expired }, 'maintenance');
        return false;
      },
      { idleMs: this.intervalMs, onError: (error) => this.kernel.logger.warn({ err: error }, 'maintenance failed') },
    );
    return this;
  }

  async stop(): Promise<void> {
    await this.loop?.stop();
  }
}
