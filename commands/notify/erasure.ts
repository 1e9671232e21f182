import { ERASURE_RULES } from '../../domain/shared/erasure';
import type { Eraser } from '../../infra/erasure';
import { deleteTenantRows, deleteTenantStreams } from '../../infra/erasure';
import { inTransaction } from '../../infra/postgres/db';

/**
 * The notification service's rule (README, Termination): in deleting_records, the tenant's queue
 * (deliveries not yet sent go unsent), its history, templates, channels and their secrets, push
 * subscriptions and the websocket buffer — read models and streams.
 */
export const notifyEraser: Eraser = {
  domain: 'notify',
  phase: ERASURE_RULES.notify,
  erase: async (kernel, tenantId) => {
    await inTransaction(kernel.db, async (tx) => {
      await deleteTenantRows(tx, tenantId, [
        'notify.deliveries',
        'notify.socket_buffer',
        'notify.push_subscriptions',
        'notify.channel_secrets',
        'rm.notify_notifications',
        'rm.notify_templates',
        'rm.notify_channels',
      ]);
      await deleteTenantStreams(tx, tenantId, ['notify.notification', 'notify.template', 'notify.channel']);
    });
  },
};
