import '@fastify/websocket';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { notifyErrors, socketErrors } from '../../domain/notify/errors';
import { ChannelView, NotificationView, TemplateView } from '../../domain/notify/views';
import { BUILT_IN_CHANNELS } from '../../domain/notify/channel';
import { Instant } from '../../infra/http/instant';
import type { Cursor } from '../../infra/http/pagination';
import { decodeCursor, encodeCursor, pageEnvelope, pageQuery, toPage } from '../../infra/http/pagination';
import { defineRoutes } from '../../infra/services';
import { loadNotifySettings } from '../../projections/notify/shared/settings';
import { deriveVapidKeys } from '../../projections/notify/shared/vapid';
import {
  builtInChannels,
  findNotification,
  findTemplateView,
  listChannels,
  listFailed,
  listNotifications,
  notificationOf,
  templateOf,
  listTemplates,
} from '../../projections/notify/queries';
import { socketHub } from './socket';
import { callerOf, type Principal } from '../../infra/http/auth';

const Id = z.uuid({ message: 'must be a UUID' });
const TimeCursor = z.object({ t: Instant, id: z.uuid() }).transform((c) => ({ at: c.t, id: c.id }));
/** channels: built-in ones first (b: how many were shown), then registered ones by name (n: the last shown; '' for none yet) */
const ChannelCursor = z.union([
  z.object({ b: z.number().int().min(0).max(100) }).strict(),
  z
    .object({
      n: z
        .string()
        .max(256)
        .refine((s) => !s.includes('\0')),
    })
    .strict(),
]);
const read = { access: 'permission', permission: 'notify.read' } as const;
const Status = NotificationView.shape.status;

export default defineRoutes({
  namespace: 'notify',
  register(app, kernel) {
    // configured keys, else derived from PLATFORM_SECRET_KEY: the same pair the delivering workers sign with
    const vapidPublicKey = (loadNotifySettings(kernel.config.env).vapid ?? deriveVapidKeys(kernel.engines.secrets))
      .publicKey;
    const r = app.withTypeProvider<ZodTypeProvider>();
    const tenantOf = (request: { principal?: Principal }) => callerOf(request).tenantId;

    r.get(
      '/notify',
      {
        config: read,
        schema: {
          summary: 'The notification history, newest first',
          querystring: z.object({
            ...pageQuery,
            channel: z.string().min(1).max(100).optional(),
            status: Status.optional(),
            userId: z.string().min(1).max(128).optional().describe('recipient.userId'),
            since: Instant.optional().describe('createdAt, inclusive'),
            until: Instant.optional().describe('createdAt, exclusive'),
          }),
          response: { 200: pageEnvelope(NotificationView) },
        },
      },
      async (request) => {
        const q = request.query;
        const rows = await listNotifications(kernel.db, tenantOf(request), {
          channel: q.channel,
          status: q.status,
          userId: q.userId,
          since: q.since,
          until: q.until,
          after: decodeCursor(q.page_token, TimeCursor) ?? undefined,
          limit: q.page_size + 1,
        });
        return toPage(rows, q.page_size, notificationOf, (row) => ({ t: row.created_at.toISOString(), id: row.id }));
      },
    );

    r.get(
      '/notify/failed',
      {
        config: read,
        schema: {
          summary: 'Failed notifications, the most recently failed first',
          querystring: z.object({
            ...pageQuery,
            channel: z.string().min(1).max(100).optional(),
            since: Instant.optional().describe('failedAt, inclusive'),
          }),
          response: { 200: pageEnvelope(NotificationView) },
        },
      },
      async (request) => {
        const q = request.query;
        const rows = await listFailed(kernel.db, tenantOf(request), {
          channel: q.channel,
          since: q.since,
          after: decodeCursor(q.page_token, TimeCursor) ?? undefined,
          limit: q.page_size + 1,
        });
        return toPage(rows, q.page_size, notificationOf, (row) => ({ t: row.failed_at!.toISOString(), id: row.id }));
      },
    );

    r.get(
      '/notify/templates',
      {
        config: read,
        schema: {
          summary: 'Templates',
          querystring: z.object({ ...pageQuery, channel: z.string().min(1).max(100).optional() }),
          response: { 200: pageEnvelope(TemplateView) },
        },
      },
      async (request) => {
        const q = request.query;
        const rows = await listTemplates(kernel.db, tenantOf(request), {
          channel: q.channel,
          afterId: decodeCursor(q.page_token, ['id'])?.id,
          limit: q.page_size + 1,
        });
        return toPage(rows, q.page_size, templateOf, (row) => ({ id: row.id }));
      },
    );

    r.get(
      '/notify/templates/:id',
      {
        config: read,
        schema: {
          summary: 'A template',
          params: z.object({ id: z.string().min(1).max(64) }),
          response: { 200: TemplateView },
        },
      },
      async (request) => {
        const found = await findTemplateView(kernel.db, tenantOf(request), request.params.id);
        if (!found) throw notifyErrors.templateNotFound();
        return found;
      },
    );

    r.get(
      '/notify/channels',
      {
        config: read,
        schema: {
          summary: 'Channels: the built-in ones, then those the tenant registered',
          querystring: z.object(pageQuery),
          response: { 200: pageEnvelope(ChannelView) },
        },
      },
      async (request) => {
        const q = request.query;
        const after = decodeCursor(q.page_token, ChannelCursor);
        const all = builtInChannels(new Set(BUILT_IN_CHANNELS));
        const from = after && 'b' in after ? after.b : after ? all.length : 0;
        const builtIn = all.slice(from, from + q.page_size);
        const room = q.page_size - builtIn.length;
        const rows = await listChannels(kernel.db, tenantOf(request), {
          afterName: after && 'n' in after ? after.n : undefined,
          limit: room + 1,
        });
        const shown = rows.slice(0, room);
        const data = [...builtIn, ...shown.map(({ cursor: _cursor, ...view }) => view)];
        // the next page starts at the next built-in channel, or after the last registered one shown
        const next: Cursor | null =
          from + builtIn.length < all.length
            ? { b: from + builtIn.length }
            : rows.length > room
              ? { n: shown.at(-1)?.cursor ?? '' }
              : null;
        return next ? { data, next_page_token: encodeCursor(next) } : { data };
      },
    );

    r.get(
      '/notify/push/vapid-key',
      {
        config: { access: 'bearer' },
        schema: {
          summary: 'The VAPID public key browsers subscribe with (applicationServerKey)',
          response: { 200: z.object({ publicKey: z.string() }) },
        },
      },
      async () => ({ publicKey: vapidPublicKey }),
    );

    r.get(
      '/notify/:id',
      {
        config: read,
        schema: { summary: 'A notification', params: z.object({ id: Id }), response: { 200: NotificationView } },
      },
      async (request) => {
        const found = await findNotification(kernel.db, tenantOf(request), request.params.id);
        if (!found) throw notifyErrors.notificationNotFound();
        return found;
      },
    );

    // Served where the client arrives, the gateway role included (never forwarded: gateway/proxy.ts)
    r.route({
      method: 'GET',
      url: '/notify/ws',
      config: { access: 'public', problems: [426] },
      schema: {
        summary:
          'The real-time socket: a WebSocket upgrade; first message {"type":"auth","token":…} (README, Notifications)',
      },
      handler: async () => {
        throw socketErrors.upgradeRequired();
      },
      wsHandler: (socket) => socketHub(kernel).accept(socket),
    });
  },
});
