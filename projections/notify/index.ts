import type { StoredEvent } from '../../domain/shared/event';
import { ChannelEvent, NotificationEvent, notificationEventTypes, TemplateEvent } from '../../domain/notify/events';
import { defineProjections } from '../../infra/services';
import type { Projection, Statement } from '../../infra/projections/projection';
import { sql } from '../../infra/projections/projection';

type Stored = StoredEvent<Record<string, unknown>>;

/**
 * what a new row shows once the sending and sent events that follow its queued event in the same
 * batch are applied (a websocket notification delivered by its accepting transaction has all three)
 */
interface RowState {
  status: string;
  attempts: number;
  sentAt: string | null;
  deliveredAt: string | null;
  updatedAt: string;
  version: number;
}

/** folds into the new row the sending and sent events right after its queued one; answers how many it took */
const foldNew = (queued: Stored, after: readonly Stored[], queuedAt: string): { row: RowState; taken: number } => {
  const row: RowState = {
    status: 'queued',
    attempts: 0,
    sentAt: null,
    deliveredAt: null,
    updatedAt: queuedAt,
    version: queued.streamVersion,
  };
  let taken = 0;
  for (const stored of after) {
    if (stored.streamId !== queued.streamId || stored.streamVersion !== row.version + 1) break;
    const e = NotificationEvent.parse({ type: stored.type, data: stored.data });
    if (e.type === 'notify.notification.sending') {
      Object.assign(row, { status: 'sending', attempts: row.attempts + 1, sentAt: e.data.startedAt });
      row.updatedAt = e.data.startedAt;
    } else if (e.type === 'notify.notification.sent') {
      Object.assign(row, { status: 'delivered', deliveredAt: e.data.deliveredAt, updatedAt: e.data.deliveredAt });
    } else break;
    row.version = stored.streamVersion;
    taken += 1;
  }
  return { row, taken };
};

const queuedRows = (t: string, news: readonly { stored: Stored; row: RowState }[]): Statement => {
  const values: unknown[] = [];
  const rows = news.map(({ stored, row }) => {
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
      row.status,
      d.priority,
      d.templateId,
      d.module,
      d.purpose,
      JSON.stringify(d.meta),
      d.queuedAt,
      row.updatedAt,
      row.version,
      row.attempts,
      row.sentAt,
      row.deliveredAt,
    );
    const n = values.length - 19;
    const p = (i: number) => `$${n + i}`;
    return `(${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)}, ${p(8)}, ${p(9)}, ${p(10)}, ${p(11)}, ${p(12)}, ${p(13)}::jsonb, ${p(14)}::timestamptz, ${p(15)}::timestamptz, ${p(16)}::int, ${p(17)}::int, ${p(18)}::timestamptz, ${p(19)}::timestamptz)`;
  });
  // a row already there (a replay) takes only what is newer than it, like the guarded updates
  return {
    text: `INSERT INTO ${t} AS r (tenant_id, id, channel, channel_type, recipient_user_id, recipient_address, subject, status, priority, template_id, module, purpose, meta, created_at, updated_at, version, attempts, sent_at, delivered_at)
      VALUES ${rows.join(',\n')}
      ON CONFLICT (tenant_id, id) DO UPDATE SET status = excluded.status, attempts = excluded.attempts, sent_at = excluded.sent_at, delivered_at = excluded.delivered_at,
        next_attempt_at = NULL, last_error = NULL, updated_at = excluded.updated_at, version = excluded.version
      WHERE r.version < excluded.version AND excluded.status <> 'queued'`,
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
  /**
   * every new notification in one insert (a queued event is version 1 of its stream: nothing of it
   * comes earlier) with the sending and sent events that follow it in the batch folded in, then the
   * other changes in log order
   */
  evolveMany: (events, t) => {
    const table = t.notify_notifications;
    const news: { stored: Stored; row: RowState }[] = [];
    const changes: Statement[] = [];
    for (let i = 0; i < events.length; i += 1) {
      const stored = events[i]!;
      if (stored.type === 'notify.notification.queued') {
        const queuedAt = String((stored.data as { queuedAt?: unknown }).queuedAt);
        const { row, taken } = foldNew(stored, events.slice(i + 1, i + 3), queuedAt);
        news.push({ stored, row });
        i += taken;
        continue;
      }
      const change = changeSql(table, stored);
      if (change) changes.push(change);
    }
    return news.length ? [queuedRows(table, news), ...changes] : changes;
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
