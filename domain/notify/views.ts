import { z } from 'zod';
import { JsonObject } from '../shared/json';
import { TemplateFormat } from './events';
import { Priority } from './priority';

/** spec 002, Notification: id, channel, recipient {userId, address}, subject, status, priority, retries, sentAt, deliveredAt, failedAt, meta */
export const NotificationView = z.object({
  id: z.string(),
  channel: z.string(),
  recipient: z.object({ userId: z.string().nullable(), address: z.string().nullable() }),
  subject: z.string(),
  status: z.enum(['queued', 'sending', 'delivered', 'failed']),
  priority: Priority,
  /** attempts beyond the first, over the notification's life */
  retries: z.number().int(),
  sentAt: z.string().nullable().describe('when the last attempt was handed to the channel'),
  deliveredAt: z.string().nullable(),
  failedAt: z.string().nullable(),
  meta: JsonObject,
  templateId: z.string().nullable(),
  /** when the next attempt is due (queued after a failed attempt) */
  nextAttemptAt: z.string().nullable(),
  lastError: z.string().nullable(),
  createdAt: z.string(),
});
export type NotificationView = z.infer<typeof NotificationView>;

/** spec 002: 202 {notificationId, status: queued, channel, createdAt} */
export const AcceptedView = z.object({
  notificationId: z.string(),
  status: z.literal('queued'),
  channel: z.string(),
  createdAt: z.string(),
});
export type AcceptedView = z.infer<typeof AcceptedView>;

export const TemplateView = z.object({
  id: z.string(),
  name: z.string(),
  channel: z.string(),
  subject: z.string(),
  body: z.string(),
  format: TemplateFormat,
  variables: z.array(z.string()),
  createdAt: z.string(),
});
export type TemplateView = z.infer<typeof TemplateView>;

/** spec 002, Channel: id, name, type, iconUrl, status, config (secrets redacted), registeredAt (null for built-in channels) */
export const ChannelView = z.object({
  id: z.string(),
  name: z.string(),
  type: z.string(),
  iconUrl: z.string().nullable(),
  status: z.enum(['active', 'disabled']),
  config: JsonObject,
  registeredAt: z.string().nullable(),
  builtIn: z.boolean(),
});
export type ChannelView = z.infer<typeof ChannelView>;
