/**
 * A worker loop: calls step until stopped; sleeps idleMs when a step did nothing and backs off
 * (up to maxBackoffMs) while steps fail, so an outage neither spins the CPU nor floods the log.
 */
export interface Loop {
  stop(): Promise<void>;
  readonly running: boolean;
}

export interface LoopOptions {
  idleMs: number;
  maxBackoffMs?: number;
  onError?: (error: unknown, consecutiveFailures: number) => void;
}

export const startLoop = (step: () => Promise<boolean>, options: LoopOptions): Loop => {
  let running = true;
  let wake: (() => void) | null = null;
  const sleep = (ms: number) => new Promise<void>((resolve) => {
    const timer = setTimeout(() => { wake = null; resolve(); }, ms);
    wake = () => { clearTimeout(timer); wake = null; resolve(); };
  });
  const done = (async () => {
    let failures = 0;
    while (running) {
      try {
        const busy = await step();
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
    get running() { return running; },
    async stop() {
      running = false;
      wake?.();
      await done;
    },
  };
};
