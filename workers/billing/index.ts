import { billingContext } from '../../commands/billing/context';
import {
  backfillSubscriptions,
  deliverAllNotices,
  escalationStep,
  takeUsageSnapshots,
} from '../../commands/billing/escalation';
import { trialsForNewTenants } from '../../commands/billing/tenants';
import { processWebhooks } from '../../commands/billing/webhooks';
import type { Kernel } from '../../infra/kernel';
import { defineWorkers } from '../../infra/services';
import type { Worker } from '../../infra/services';
import type { Loop } from '../loop';
import { startLoop } from '../loop';

const BACKFILL_EVERY_MS = 10 * 60_000;

/** new tenants get their trial within moments of their creation (commands/billing/tenants.ts) */
const tenantTrials = (kernel: Kernel): Worker => {
  let loop: Loop | null = null;
  return {
    name: 'billing.tenant-trials',
    start() {
      const ctx = billingContext(kernel);
      loop = startLoop(async () => (await trialsForNewTenants(kernel, ctx)) > 0, {
        idleMs: 200,
        onError: (error) =>
          kernel.logger.warn({ err: error }, 'billing: starting the trials of new tenants failed; retrying'),
      });
    },
    async stop() {
      await loop?.stop();
    },
  };
};

/** the escalation worker (on the injectable clock): transitions and notices, the backfill, the daily usage snapshot */
const escalation = (kernel: Kernel): Worker => {
  let loop: Loop | null = null;
  let backfilledAt = Number.NEGATIVE_INFINITY;
  let snapshotDay = '';
  return {
    name: 'billing.escalation',
    start() {
      const ctx = billingContext(kernel);
      loop = startLoop(
        async () => {
          const now = ctx.clock.now();
          if (now.getTime() - backfilledAt >= BACKFILL_EVERY_MS || now.getTime() < backfilledAt) {
            const created = await backfillSubscriptions(kernel, ctx);
            if (created) kernel.logger.info({ created }, 'billing: trials started for tenants without a subscription');
            backfilledAt = now.getTime();
          }
          const { transitions, notices, delivered } = await escalationStep(kernel, ctx);
          if (transitions || notices || delivered)
            kernel.logger.info({ transitions, notices, delivered }, 'billing escalation');
          const day = now.toISOString().slice(0, 10);
          if (day !== snapshotDay) {
            await takeUsageSnapshots(kernel, ctx);
            snapshotDay = day;
          }
          return false;
        },
        {
          idleMs: ctx.settings.escalationIntervalMs,
          onError: (error) => kernel.logger.warn({ err: error }, 'billing escalation failed'),
        },
      );
    },
    async stop() {
      await loop?.stop();
    },
  };
};

/** stored webhooks applied soon after they arrive, and notices delivered soon after they are recorded */
const webhooks = (kernel: Kernel): Worker => {
  let loop: Loop | null = null;
  return {
    name: 'billing.webhooks',
    start() {
      const ctx = billingContext(kernel);
      loop = startLoop(
        async () => {
          const { more } = await processWebhooks(kernel, ctx);
          await deliverAllNotices(kernel, ctx);
          return more;
        },
        { idleMs: 250, onError: (error) => kernel.logger.warn({ err: error }, 'billing webhook processing failed') },
      );
    },
    async stop() {
      await loop?.stop();
    },
  };
};

export default defineWorkers({
  workers: (kernel) =>
    billingContext(kernel).settings.enabled ? [tenantTrials(kernel), escalation(kernel), webhooks(kernel)] : [],
});
