import { replayAuditFallback } from '../../infra/audit';
import { defineWorkers } from '../../infra/modules';
import type { Loop } from '../loop';
import { startLoop } from '../loop';

/**
 * Replays API-call audit records the gateway parked in gateway.api_audit_fallback while the log was
 * down, every AUDIT_REPLAY_INTERVAL_MS (30 s); a full batch is followed at once by the next.
 */
export default defineWorkers({
  workers: (kernel) => {
    let loop: Loop | null = null;
    let failures = 0;
    return [
      {
        name: 'gateway.audit-fallback-replay',
        start() {
          loop = startLoop(
            async () => {
              const n = await replayAuditFallback(kernel);
              if (n > 0) kernel.logger.info({ replayed: n }, 'audit records replayed from the fallback table');
              failures = 0;
              return n >= 500;
            },
            {
              idleMs: kernel.config.AUDIT_REPLAY_INTERVAL_MS,
              maxBackoffMs: kernel.config.AUDIT_REPLAY_INTERVAL_MS,
              onError: (error) => {
                failures += 1;
                if (failures === 1 || failures % 20 === 0)
                  kernel.logger.warn({ err: error, failures }, 'API-call audit replay failed; retrying');
              },
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
