import { BUILT_IN_CHANNELS } from '../../domain/notify/channel';
import type { TemplateFormat } from '../../domain/notify/events';
import type { Priority } from '../../domain/notify/priority';
import type { ChannelView, NotificationView, TemplateView } from '../../domain/notify/views';
import type { Queryable } from '../../infra/postgres/db';

export interface NotificationRow {
  id: string;
  channel: string;
  recipient_user_id: string | null;
  recipient_address: string | null;
  subject: string;
  status: NotificationView['status'];
  priority: Priority;
  attempts: number;
  template_id: string | null;
  meta: Record<string, unknown>;
  last_error: string | null;
  next_attempt_at: Date | null;
  sent_at: Date | null;
  delivered_at: Date | null;
  failed_at: Date | null;
  created_at: Date;
}

const COLUMNS = `id, channel, recipient_user_id, recipient_address, subject, status, priority, attempts, template_id, meta, last_error, next_attempt_at,
  sent_at, delivered_at, failed_at, created_at`;
const iso = (d: Date | null) => (d ? d.toISOString() : null);

export const notificationOf = (r: NotificationRow): NotificationView => ({
  id: r.id,
  channel: r.channel,
  recipient: { userId: r.recipient_user_id, address: r.recipient_address },
  subject: r.subject,
  status: r.status,
  priority: r.priority,
  retries: Math.max(0, r.attempts - 1),
  sentAt: iso(r.sent_at),
  deliveredAt: iso(r.delivered_at),
  failedAt: iso(r.failed_at),
  meta: r.meta,
  templateId: r.template_id,
  nextAttemptAt: iso(r.next_attempt_at),
  lastError: r.last_error,
  createdAt: r.created_at.toISOString(),
});

export const findNotification = async (
  q: Queryable,
  tenantId: string,
  id: string,
): Promise<NotificationView | null> => {
  const { rows } = await q.query<NotificationRow>(
    `SELECT ${COLUMNS} FROM rm.notify_notifications WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id],
  );
  return rows[0] ? notificationOf(rows[0]) : null;
};

export interface HistoryFilter {
  channel?: string;
  status?: string;
  userId?: string;
  since?: string;
  until?: string;
  after?: { at: string; id: string };
  limit: number;
}

/** the history, newest first (keyset on created_at, id) */
export const listNotifications = async (
  q: Queryable,
  tenantId: string,
  f: HistoryFilter,
): Promise<NotificationRow[]> => {
  const where = ['tenant_id = $1'];
  const values: unknown[] = [tenantId];
  const add = (clause: (p: string) => string, value: unknown) => {
    values.push(value);
    where.push(clause(`$${values.length}`));
  };
  if (f.channel) add((p) => `channel = ${p}`, f.channel);
  if (f.status) add((p) => `status = ${p}`, f.status);
  if (f.userId) add((p) => `recipient_user_id = ${p}`, f.userId);
  if (f.since) add((p) => `created_at >= ${p}`, f.since);
  if (f.until) add((p) => `created_at < ${p}`, f.until);
  if (f.after) {
    values.push(f.after.at, f.after.id);
    where.push(`(created_at, id) < ($${values.length - 1}::timestamptz, $${values.length})`);
  }
  values.push(f.limit);
  const { rows } = await q.query<NotificationRow>(
    `SELECT ${COLUMNS} FROM rm.notify_notifications WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $${values.length}`,
    values,
  );
  return rows;
};

/** failed notifications, the most recently failed first (keyset on failed_at, id) */
export const listFailed = async (
  q: Queryable,
  tenantId: string,
  f: { channel?: string; since?: string; after?: { at: string; id: string }; limit: number },
): Promise<NotificationRow[]> => {
  const where = [`tenant_id = $1`, `status = 'failed'`];
  const values: unknown[] = [tenantId];
  if (f.channel) {
    values.push(f.channel);
    where.push(`channel = $${values.length}`);
  }
  if (f.since) {
    values.push(f.since);
    where.push(`failed_at >= $${values.length}`);
  }
  if (f.after) {
    values.push(f.after.at, f.after.id);
    where.push(`(failed_at, id) < ($${values.length - 1}::timestamptz, $${values.length})`);
  }
  values.push(f.limit);
  const { rows } = await q.query<NotificationRow>(
    `SELECT ${COLUMNS} FROM rm.notify_notifications WHERE ${where.join(' AND ')} ORDER BY failed_at DESC, id DESC LIMIT $${values.length}`,
    values,
  );
  return rows;
};

export interface TemplateRow {
  id: string;
  name: string;
  channel: string;
  subject: string;
  body: string;
  format: TemplateFormat;
  variables: string[];
  created_at: Date;
}
export const templateOf = (r: TemplateRow): TemplateView => ({
  id: r.id,
  name: r.name,
  channel: r.channel,
  subject: r.subject,
  body: r.body,
  format: r.format,
  variables: r.variables,
  createdAt: r.created_at.toISOString(),
});

export const listTemplates = async (
  q: Queryable,
  tenantId: string,
  f: { channel?: string; afterId?: string; limit: number },
): Promise<TemplateRow[]> => {
  const { rows } = await q.query<TemplateRow>(
    `SELECT id, name, channel, subject, body, format, variables, created_at FROM rm.notify_templates
     WHERE tenant_id = $1 AND ($2::text IS NULL OR channel = $2) AND id > $3 ORDER BY id LIMIT $4`,
    [tenantId, f.channel ?? null, f.afterId ?? '', f.limit],
  );
  return rows;
};

/** a template of the tenant as stored (the notify commands render it: commands/notify/lookups.ts) */
export const findTemplate = async (q: Queryable, tenantId: string, id: string): Promise<TemplateRow | null> =>
  (
    await q.query<TemplateRow>(
      'SELECT id, name, channel, subject, body, format, variables, created_at FROM rm.notify_templates WHERE tenant_id = $1 AND id = $2',
      [tenantId, id],
    )
  ).rows[0] ?? null;

export const findTemplateView = async (q: Queryable, tenantId: string, id: string): Promise<TemplateView | null> => {
  const row = await findTemplate(q, tenantId, id);
  return row ? templateOf(row) : null;
};

interface ChannelRow {
  id: string;
  name: string;
  type: string;
  icon_url: string | null;
  status: 'active' | 'disabled';
  config: Record<string, unknown>;
  registered_at: Date;
}
const channelOf = (r: ChannelRow): ChannelView => ({
  id: r.id,
  name: r.name,
  type: r.type,
  iconUrl: r.icon_url,
  status: r.status,
  config: r.config,
  registeredAt: r.registered_at.toISOString(),
  builtIn: false,
});

export const builtInChannels = (installed: ReadonlySet<string>): ChannelView[] =>
  BUILT_IN_CHANNELS.filter((c) => installed.has(c)).map((c) => ({
    id: c,
    name: c,
    type: c,
    iconUrl: null,
    status: 'active' as const,
    config: {},
    registeredAt: null,
    builtIn: true,
  }));

/** the tenant's registered channels, by name; the built-in ones come first on the first page */
export const listChannels = async (
  q: Queryable,
  tenantId: string,
  f: { afterName?: string; limit: number },
): Promise<(ChannelView & { cursor: string })[]> => {
  const { rows } = await q.query<ChannelRow>(
    `SELECT id, name, type, icon_url, status, config, registered_at FROM rm.notify_channels WHERE tenant_id = $1 AND lower(name) > $2 ORDER BY lower(name) LIMIT $3`,
    [tenantId, f.afterName ?? '', f.limit],
  );
  return rows.map((r) => ({ ...channelOf(r), cursor: r.name.toLowerCase() }));
};
