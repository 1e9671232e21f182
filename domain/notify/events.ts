import { z } from 'zod';
import { JsonObject } from '../shared/json';
import { Priority } from './priority';

/**
 * The notification service's events (platform.notify.events). A notification's content (body,
 * mail headers such as one-time tokens) is never in an event: it waits in the delivery queue
 * (notify.deliveries) until delivered, so the log carries what happened, not what was said.
 */
export const Recipient = z.object({ userId: z.string().nullable(), address: z.string().nullable() });
export type Recipient = z.infer<typeof Recipient>;

const NotificationQueued = z.object({
  type: z.literal('notify.notification.queued'),
  data: z.object({
    notificationId: z.string(),
    /** the channel as the sender named it (email, websocket, push or a registered channel's name) */
    channel: z.string(),
    /** the adapter that delivers it */
    channelType: z.string(),
    channelId: z.string().nullable(),
    recipient: Recipient,
    subject: z.string(),
    priority: Priority,
    templateId: z.string().nullable(),
    meta: JsonObject,
    /** the platform module that sent it (identity, billing, …): the per-module rate limit's key */
    module: z.string().nullable(),
    purpose: z.string().nullable(),
    queuedAt: z.string(),
  }),
});

const NotificationSending = z.object({
  type: z.literal('notify.notification.sending'),
  data: z.object({ notificationId: z.string(), attempt: z.number().int(), startedAt: z.string() }),
});

/** spec 002: the adapter confirmed the delivery */
const NotificationSent = z.object({
  type: z.literal('notify.notification.sent'),
  data: z.object({
    notificationId: z.string(),
    channel: z.string(),
    attempt: z.number().int(),
    sentAt: z.string(),
    deliveredAt: z.string(),
    /** an earlier attempt may have reached the recipient too (its worker was lost or timed out mid-send) */
    possibleDuplicate: z.boolean(),
  }),
});

const AttemptFailed = z.object({
  type: z.literal('notify.notification.attempt_failed'),
  data: z.object({
    notificationId: z.string(),
    attempt: z.number().int(),
    error: z.string(),
    failedAt: z.string(),
    /** the next attempt is due this long after failedAt (the backoff with its jitter; 0 when the worker was lost) */
    retryInMs: z.number().int(),
    /** the attempt's worker was lost: its outcome is unknown */
    interrupted: z.boolean(),
  }),
});

const NotificationFailed = z.object({
  type: z.literal('notify.notification.failed'),
  data: z.object({
    notificationId: z.string(),
    attempt: z.number().int(),
    error: z.string(),
    failedAt: z.string(),
    permanent: z.boolean(),
  }),
});

const NotificationRequeued = z.object({
  type: z.literal('notify.notification.requeued'),
  data: z.object({ notificationId: z.string(), requeuedAt: z.string() }),
});

export const NotificationEvent = z.discriminatedUnion('type', [
  NotificationQueued,
  NotificationSending,
  NotificationSent,
  AttemptFailed,
  NotificationFailed,
  NotificationRequeued,
]);
export type NotificationEvent = z.infer<typeof NotificationEvent>;
export type QueuedData = z.infer<typeof NotificationQueued>['data'];
export const notificationEventTypes = NotificationEvent.options.map((o) => o.shape.type.value);

export const TemplateFormat = z.enum(['text', 'html']);
export type TemplateFormat = z.infer<typeof TemplateFormat>;

const TemplateCreated = z.object({
  type: z.literal('notify.template.created'),
  data: z.object({
    templateId: z.string(),
    name: z.string(),
    channel: z.string(),
    subject: z.string(),
    body: z.string(),
    format: TemplateFormat,
    variables: z.array(z.string()),
    createdAt: z.string(),
  }),
});
export const TemplateEvent = z.discriminatedUnion('type', [TemplateCreated]);
export type TemplateEvent = z.infer<typeof TemplateEvent>;
export type TemplateData = z.infer<typeof TemplateCreated>['data'];

const ChannelRegistered = z.object({
  type: z.literal('notify.channel.registered'),
  data: z.object({
    channelId: z.string(),
    name: z.string(),
    type: z.string(),
    iconUrl: z.string().nullable(),
    /** with every secret replaced by "[redacted]": secrets are sealed in notify.channel_secrets, never in an event */
    config: JsonObject,
    registeredAt: z.string(),
  }),
});
export const ChannelEvent = z.discriminatedUnion('type', [ChannelRegistered]);
export type ChannelEvent = z.infer<typeof ChannelEvent>;
export type ChannelData = z.infer<typeof ChannelRegistered>['data'];
