import { identityEraser } from '../../commands/identity/erasure';
import { erasureWorker } from '../erasure';
import { purgeExpiredIdentityTokens } from '../../commands/identity/maintenance';
import { defineWorkers } from '../../infra/services';
import type { Loop } from '../loop';
import { startLoop } from '../loop';

const HOURLY = 3600_000;

/** Hourly purge of expired one-time and refresh tokens, so the identity tables do not grow without end. */
export default defineWorkers({
  workers: (kernel) => {
    let loop: Loop | null = null;
    return [
      erasureWorker(kernel, identityEraser),
      {
        name: 'identity.token-purge',
        start() {
          loop = startLoop(
            async () => {
              const purged = await purgeExpiredIdentityTokens(kernel.db, kernel.clock.now());
              if (purged.oneTime || purged.refresh) kernel.logger.info(purged, 'expired identity tokens purged');
              return false;
            },
            {
              idleMs: HOURLY,
              maxBackoffMs: HOURLY,
              onError: (error) => kernel.logger.warn({ err: error }, 'identity token purge failed'),
            },
          );
        },
        async stop() {
          await loop?.stop();
        },
      },
    ];
  },
});
