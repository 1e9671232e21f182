import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import { isDomainError } from '../../domain/shared/errors';
import { billingContext } from '../../commands/billing/context';
import { backfillSubscriptions, deliverAllNotices, escalationStep, startTrial, takeUsageSnapshots } from '../../commands/billing/escalation';
import { processWebhooks } from '../../commands/billing/webhooks';
import type { Kernel } from '../../infra/kernel';
import type { Subscription as LogSubscription } from '../../infra/log/port';
import { defineWorkers } from '../../infra/modules';
import type { Worker } from '../../infra/modules';
import type { Loop } from '../loop';
import { startLoop } from '../loop';

const BACKFILL_EVERY_MS = 10 * 60_000;
const RETRY_MS = 2_000;

/**
 * New tenants get their trial (spec 001: a trialing subscription for every new tenant): a consumer
 * of identity's auth.tenant.created on platform.auth.events (group billing.tenant-trials, from the
 * earliest offset the first time), plus the backfill, at start and every 10 minutes, for tenants
 * that existed before billing or whose event the consumer has not seen yet.
 */
const tenantTrials = (kernel: Kernel): Worker => {
  let subscription: LogSubscription | null = null;
  let stopped = false;
  const subscribe = async (): Promise<void> => {
    while (!stopped) {
      try {
        const s = await kernel.log.subscribe({
          groupId: 'billing.tenant-trials', topics: ['platform.auth.events'], start: 'earliest',
          eachBatch: async (records) => {
            for (const record of records) {
              if (record.headers.type !== 'auth.tenant.created') continue;
              const tenantId = (JSON.parse(record.value) as { tenantId: string }).tenantId;
              // the platform's own tenant is no customer; a refusal is an answer, not a reason to read the batch again
              if (tenantId === PLATFORM_TENANT_ID) continue;
              try {
                await startTrial(kernel, billingContext(kernel), tenantId);
              } catch (error) {
                if (!isDomainError(error)) throw error;
                kernel.logger.warn({ err: error, tenantId }, 'billing: no trial for a new tenant');
              }
            }
          },
        });
        if (stopped) await s.stop();
        else subscription = s;
        return;
      } catch (error) {
        kernel.logger.warn({ err: error }, 'billing: the tenant consumer could not subscribe; retrying (the backfill covers new tenants meanwhile)');
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS).unref());
      }
    }
  };
  return {
    name: 'billing.tenant-trials',
    start() { void subscribe(); },
    async stop() {
      stopped = true;
      await subscription?.stop();
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
      loop = startLoop(async () => {
        const now = ctx.clock.now();
        if (now.getTime() - backfilledAt >= BACKFILL_EVERY_MS || now.getTime() < backfilledAt) {
          const created = await backfillSubscriptions(kernel, ctx);
          if (created) kernel.logger.info({ created }, 'billing: trials started for tenants without a subscription');
          backfilledAt = now.getTime();
        }
        const { transitions, notices, delivered } = await escalationStep(kernel, ctx);
        if (transitions || notices || delivered) kernel.logger.info({ transitions, notices, delivered }, 'billing escalation');
        const day = now.toISOString().slice(0, 10);
        if (day !== snapshotDay) {
          await takeUsageSnapshots(kernel, ctx);
          snapshotDay = day;
        }
        return false;
      }, { idleMs: ctx.settings.escalationIntervalMs, onError: (error) => kernel.logger.warn({ err: error }, 'billing escalation failed') });
    },
    async stop() { await loop?.stop(); },
  };
};

/** stored webhooks applied soon after they arrive, and notices delivered soon after they are recorded */
const webhooks = (kernel: Kernel): Worker => {
  let loop: Loop | null = null;
  return {
    name: 'billing.webhooks',
    start() {
      const ctx = billingContext(kernel);
      loop = startLoop(async () => {
        const { more } = await processWebhooks(kernel, ctx);
        await deliverAllNotices(kernel, ctx);
        return more;
      }, { idleMs: 250, onError: (error) => kernel.logger.warn({ err: error }, 'billing webhook processing failed') });
    },
    async stop() { await loop?.stop(); },
  };
};

export default defineWorkers({
  workers: (kernel) => (billingContext(kernel).settings.enabled ? [tenantTrials(kernel), escalation(kernel), webhooks(kernel)] : []),
});
