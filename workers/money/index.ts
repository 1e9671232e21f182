import { moneyEraser } from '../../commands/money/erasure';
import { erasureWorker } from '../erasure';
import { moneyContext } from '../../commands/money/context';
import { defineWorkers } from '../../infra/services';
import type { Loop } from '../loop';
import { startLoop } from '../loop';
import { holdExpiryStep } from './hold-expiry';

export default defineWorkers({
  workers: (kernel) => {
    let loop: Loop | null = null;
    return [
      erasureWorker(kernel, moneyEraser),
      {
        name: 'money.hold-expiry',
        start() {
          loop = startLoop(holdExpiryStep(kernel), {
            idleMs: moneyContext(kernel).settings.holdCleanupIntervalMs,
            onError: (error) => kernel.logger.warn({ err: error }, 'hold expiry failed'),
          });
        },
        async stop() {
          await loop?.stop();
        },
      },
    ];
  },
});
