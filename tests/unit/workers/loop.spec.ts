import { describe, expect, it } from 'vitest';
import { startLoop } from '../../../workers/loop';

describe('a worker loop being stopped', () => {
  it('aborts the signal of the step in progress, so a long step can leave its work and stop() resolves', async () => {
    let entered!: () => void;
    const inStep = new Promise<void>((resolve) => (entered = resolve));
    let sawAbort = false;
    // a step that would run for an hour unless told to stop
    const loop = startLoop(
      (signal) =>
        new Promise<boolean>((resolve) => {
          entered();
          const hour = setTimeout(() => resolve(true), 3_600_000);
          signal.addEventListener('abort', () => {
            clearTimeout(hour);
            sawAbort = true;
            resolve(true);
          });
        }),
      { idleMs: 10 },
    );
    await inStep;
    await loop.stop();
    expect(sawAbort).toBe(true);
    expect(loop.running).toBe(false);
  });
});
