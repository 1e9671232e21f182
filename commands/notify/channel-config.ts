import type { Kernel } from '../../infra/kernel';
import type { NotifyContext } from './context';

/** a registered channel's config with its secrets opened, for the adapter that sends through it */
export const channelConfig = async (
  kernel: Kernel,
  ctx: NotifyContext,
  tenantId: string,
  channelId: string,
): Promise<Record<string, unknown>> => {
  const { rows } = await kernel.db.query<{ config: Record<string, unknown>; sealed: string | null }>(
    `SELECT c.config, s.sealed FROM rm.notify_channels c LEFT JOIN notify.channel_secrets s ON s.tenant_id = c.tenant_id AND s.channel_id = c.id
     WHERE c.tenant_id = $1 AND c.id = $2`,
    [tenantId, channelId],
  );
  const row = rows[0];
  if (!row) return {};
  const secrets = row.sealed
    ? (JSON.parse(ctx.secrets.openString(row.sealed, secretContext(tenantId, channelId))) as Record<string, unknown>)
    : {};
  return { ...row.config, ...secrets };
};

/** binds a sealed secret to its channel: a value copied to another row does not open */
export const secretContext = (tenantId: string, channelId: string): string => `notify.channel:${tenantId}:${channelId}`;
