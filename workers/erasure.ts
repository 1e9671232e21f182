import type { Eraser } from '../infra/erasure';
import { eraseStep, registerParticipant } from '../infra/erasure';
import type { Kernel } from '../infra/kernel';
import type { Worker } from '../infra/services';
import type { Loop } from './loop';
import { startLoop } from './loop';

/**
 * A service's eraser as a worker (infra/erasure.ts): it registers the service as a participant
 * of its phase, then follows billing's erasure requests on the log.
 */
export const erasureWorker = (kernel: Kernel, eraser: Eraser): Worker => {
  let loop: Loop | null = null;
  let registered = false;
  return {
    name: `${eraser.domain}.erasure`,
    start() {
      loop = startLoop(
        async () => {
          if (!registered) {
            await registerParticipant(kernel, eraser);
            registered = true;
          }
          return (await eraseStep(kernel, eraser)) > 0;
        },
        {
          idleMs: 500,
          onError: (error) =>
            kernel.logger.warn({ err: error, service: eraser.domain }, 'erasing a terminated tenant failed; retrying'),
        },
      );
    },
    async stop() {
      await loop?.stop();
    },
  };
};
