/**
 * A worker loop: calls step until stopped; sleeps idleMs when a step did nothing and backs off
 * (up to maxBackoffMs) while steps fail, so an outage neither spins the CPU nor floods the log.
 * wake() ends a sleep early (new work announced by a notification). stop() aborts the signal the
 * step is given: a long step (an export over years) leaves its work to be taken up again rather
 * than hold the process's drain past SHUTDOWN_GRACE_MS.
 */
export interface Loop {
  stop(): Promise<void>;
  wake(): void;
  readonly running: boolean;
}

export interface LoopOptions {
  idleMs: number;
  maxBackoffMs?: number;
  onError?: (error: unknown, consecutiveFailures: number) => void;
}

export const startLoop = (step: (signal: AbortSignal) => Promise<boolean>, options: LoopOptions): Loop => {
  let running = true;
  const stopping = new AbortController();
  let wake: (() => void) | null = null;
  /** a wake-up that came while the step ran: the next sleep is skipped */
  let woken = false;
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (woken) {
        woken = false;
        resolve();
        return;
      }
      const timer = setTimeout(() => {
        wake = null;
        resolve();
      }, ms);
      wake = () => {
        clearTimeout(timer);
        wake = null;
        resolve();
      };
    });
  const done = (async () => {
    let failures = 0;
    while (running) {
      try {
        woken = false;
        const busy = await step(stopping.signal);
        failures = 0;
        if (!busy && running) await sleep(options.idleMs);
      } catch (error) {
        failures += 1;
        options.onError?.(error, failures);
        if (running) await sleep(Math.min(options.maxBackoffMs ?? 5000, options.idleMs * 2 ** Math.min(failures, 10)));
      }
    }
  })();
  return {
    get running() {
      return running;
    },
    wake() {
      if (wake) wake();
      else woken = true;
    },
    async stop() {
      running = false;
      stopping.abort(new Error('the worker is stopping'));
      wake?.();
      await done;
    },
  };
};
