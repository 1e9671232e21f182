import type { StoredEvent } from '../../domain/shared/event';
import { ChannelEvent, NotificationEvent, notificationEventTypes, TemplateEvent } from '../../domain/notify/events';
import { defineProjections } from '../../infra/services';
import type { Projection, Statement } from '../../infra/projections/projection';
import { sql } from '../../infra/projections/projection';

type Stored = StoredEvent<Record<string, unknown>>;

const queuedRows = (t: string, events: Stored[]): Statement => {
  const values: unknown[] = [];
  const rows = events.map((stored) => {
    const e = NotificationEvent.parse({ type: stored.type, data: stored.data });
    if (e.type !== 'notify.notification.queued') throw new Error('queuedRows takes queued events');
    const d = e.data;
    values.push(
      stored.tenantId,
      d.notificationId,
      d.channel,
      d.channelType,
      d.recipient.userId,
      d.recipient.address,
      d.subject,
      d.priority,
      d.templateId,
      d.module,
      d.purpose,
      JSON.stringify(d.meta),
      d.queuedAt,
      stored.streamVersion,
    );
    const n = values.length - 14;
    const p = (i: number) => `$${n + i}`;
    return `(${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)}, 'queued', ${p(8)}, ${p(9)}, ${p(10)}, ${p(11)}, ${p(12)}::jsonb, ${p(13)}::timestamptz, ${p(13)}::timestamptz, ${p(14)}::int)`;
  });
  return {
    text: `INSERT INTO ${t} (tenant_id, id, channel, channel_type, recipient_user_id, recipient_address, subject, status, priority, template_id, module, purpose, meta, created_at, updated_at, version)
      VALUES ${rows.join(',\n')} ON CONFLICT (tenant_id, id) DO NOTHING`,
    values,
  };
};

/** the statement for one event after the first; every update is guarded by the stream version, so a replay changes nothing */
const changeSql = (t: string, stored: Stored): Statement | null => {
  const e = NotificationEvent.parse({ type: stored.type, data: stored.data });
  const guard = `WHERE tenant_id = $1 AND id = $2 AND version < $3`;
  const args = [stored.tenantId, e.data.notificationId, stored.streamVersion] as const;
  switch (e.type) {
    case 'notify.notification.queued':
      return null;
    case 'notify.notification.sending':
      return sql(
        `UPDATE ${t} SET status = 'sending', attempts = attempts + 1, sent_at = $4, next_attempt_at = NULL, updated_at = $4, version = $3 ${guard}`,
        ...args,
        e.data.startedAt,
      );
    case 'notify.notification.sent':
      return sql(
        `UPDATE ${t} SET status = 'delivered', delivered_at = $4, last_error = NULL, updated_at = $4, version = $3 ${guard}`,
        ...args,
        e.data.deliveredAt,
      );
    case 'notify.notification.attempt_failed':
      return sql(
        `UPDATE ${t} SET status = 'queued', last_error = $4, next_attempt_at = $5::timestamptz + $6 * interval '1 millisecond', updated_at = $5, version = $3 ${guard}`,
        ...args,
        e.data.error,
        e.data.failedAt,
        e.data.retryInMs,
      );
    case 'notify.notification.failed':
      return sql(
        `UPDATE ${t} SET status = 'failed', last_error = $4, failed_at = $5, next_attempt_at = NULL, updated_at = $5, version = $3 ${guard}`,
        ...args,
        e.data.error,
        e.data.failedAt,
      );
    case 'notify.notification.requeued':
      return sql(
        `UPDATE ${t} SET status = 'queued', failed_at = NULL, next_attempt_at = $4, updated_at = $4, version = $3 ${guard}`,
        ...args,
        e.data.requeuedAt,
      );
  }
};

/**
 * The notification history (GET /notify, /notify/:id, /notify/failed): inline, so a notification
 * answers right after POST. Subjects are here, bodies never (they stay in the queue until sent).
 */
export const notificationsProjection: Projection<'notify_notifications'> = {
  name: 'notify.notifications',
  version: 1,
  mode: 'inline',
  handles: notificationEventTypes,
  tables: {
    notify_notifications: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, id text NOT NULL, channel text NOT NULL, channel_type text NOT NULL, recipient_user_id text, recipient_address text,
        subject text NOT NULL, status text NOT NULL, priority text NOT NULL, attempts int NOT NULL DEFAULT 0, template_id text, module text, purpose text,
        meta jsonb NOT NULL, last_error text, next_attempt_at timestamptz, sent_at timestamptz, delivered_at timestamptz, failed_at timestamptz,
        created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, version int NOT NULL, PRIMARY KEY (tenant_id, id))`,
      `CREATE INDEX ON ${t} (tenant_id, created_at DESC, id DESC)`,
      `CREATE INDEX ON ${t} (tenant_id, failed_at DESC, id DESC) WHERE status = 'failed'`,
      `CREATE INDEX ON ${t} (created_at)`,
    ],
  },
  evolve: (stored, t) => notificationsProjection.evolveMany!([stored], t),
  /** every new notification in one insert (a queued event is version 1 of its stream: nothing of it comes earlier), then the changes in log order */
  evolveMany: (events, t) => {
    const table = t.notify_notifications;
    const queued = events.filter((e) => e.type === 'notify.notification.queued');
    const changes = events.map((e) => changeSql(table, e)).filter((s): s is Statement => s !== null);
    return queued.length ? [queuedRows(table, queued), ...changes] : changes;
  },
};

export const templatesProjection: Projection<'notify_templates'> = {
  name: 'notify.templates',
  version: 1,
  mode: 'inline',
  handles: ['notify.template.created'],
  tables: {
    notify_templates: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, id text NOT NULL, name text NOT NULL, channel text NOT NULL, subject text NOT NULL, body text NOT NULL,
        format text NOT NULL, variables text[] NOT NULL, created_at timestamptz NOT NULL, PRIMARY KEY (tenant_id, id))`,
      // names are unique per tenant: the handler checks under a lock, this is the last wall
      `CREATE UNIQUE INDEX ON ${t} (tenant_id, lower(name))`,
    ],
  },
  evolve: (stored, t) => {
    const { data: d } = TemplateEvent.parse({ type: stored.type, data: stored.data });
    return [
      sql(
        `INSERT INTO ${t.notify_templates} (tenant_id, id, name, channel, subject, body, format, variables, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
      ON CONFLICT (tenant_id, id) DO NOTHING`,
        stored.tenantId,
        d.templateId,
        d.name,
        d.channel,
        d.subject,
        d.body,
        d.format,
        d.variables,
        d.createdAt,
      ),
    ];
  },
};

export const channelsProjection: Projection<'notify_channels'> = {
  name: 'notify.channels',
  version: 1,
  mode: 'inline',
  handles: ['notify.channel.registered'],
  tables: {
    notify_channels: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, id text NOT NULL, name text NOT NULL, type text NOT NULL, icon_url text, status text NOT NULL,
        config jsonb NOT NULL, registered_at timestamptz NOT NULL, PRIMARY KEY (tenant_id, id))`,
      `CREATE UNIQUE INDEX ON ${t} (tenant_id, lower(name))`,
    ],
  },
  evolve: (stored, t) => {
    const { data: d } = ChannelEvent.parse({ type: stored.type, data: stored.data });
    return [
      sql(
        `INSERT INTO ${t.notify_channels} (tenant_id, id, name, type, icon_url, status, config, registered_at) VALUES ($1, $2, $3, $4, $5, 'active', $6::jsonb, $7)
      ON CONFLICT (tenant_id, id) DO NOTHING`,
        stored.tenantId,
        d.channelId,
        d.name,
        d.type,
        d.iconUrl,
        JSON.stringify(d.config),
        d.registeredAt,
      ),
    ];
  },
};

export default defineProjections({ projections: [notificationsProjection, templatesProjection, channelsProjection] });
