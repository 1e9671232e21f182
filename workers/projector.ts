import type { Kernel } from '../infra/kernel';
import type { Loop } from './loop';
import { startLoop } from './loop';

/** Keeps one async projection caught up with the global log, a batch per transaction. */
export class ProjectorWorker {
  private loop: Loop | null = null;

  constructor(
    private readonly kernel: Kernel,
    readonly name: string,
    private readonly idleMs = 50,
  ) {}

  start(): this {
    this.loop = startLoop(async () => (await this.kernel.projections.runBatch(this.name)) > 0, {
      idleMs: this.idleMs,
      onError: (error, n) => {
        if (n === 1 || n % 50 === 0)
          this.kernel.logger.error(
            { err: error, projection: this.name, failures: n },
            'projection batch failed; retrying',
          );
      },
    });
    return this;
  }

  async stop(): Promise<void> {
    await this.loop?.stop();
  }
}
