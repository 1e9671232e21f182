import { commonErrors } from '../../domain/shared/errors';

/**
 * Bounds CPU-heavy work such as argon2id hashing (tens of ms of a core each) so that one caller
 * cannot take the process down: at most `concurrency` jobs run at once process-wide, at most
 * `maxQueue` wait, and one key (an account or an email) has at most `perKey` jobs in flight —
 * the rest are refused at once (429 for the key's excess, 503 when the whole queue is full),
 * never left to pile up on the database pool or the thread pool.
 */
export class WorkLimiter {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly inFlight = new Map<string, number>();

  constructor(private readonly limits: { concurrency: number; perKey: number; maxQueue: number }) {}

  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const mine = this.inFlight.get(key) ?? 0;
    if (mine >= this.limits.perKey) throw commonErrors.rateLimited(1);
    if (this.running >= this.limits.concurrency && this.waiting.length >= this.limits.maxQueue)
      throw commonErrors.overloaded(1);
    this.inFlight.set(key, mine + 1);
    try {
      await this.acquire();
      try {
        return await work();
      } finally {
        this.release();
      }
    } finally {
      const left = (this.inFlight.get(key) ?? 1) - 1;
      if (left > 0) this.inFlight.set(key, left);
      else this.inFlight.delete(key);
    }
  }

  private acquire(): Promise<void> {
    if (this.running < this.limits.concurrency) {
      this.running += 1;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** hands the slot to the next waiter, or frees it */
  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.running -= 1;
  }
}
