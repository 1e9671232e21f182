import type { Mailer } from './mail';

/**
 * The platform's own messages (identity's verification, reset, invitation and lockout mails,
 * billing's notices) go through this port. The notification service installs an implementation
 * that queues them (retries, priorities, history); without it, mail goes straight to the mail port,
 * as before the service existed.
 */
export type NotificationRecipient = { userId: string } | { address: string };

export interface PlatformNotification {
  /** the tenant the message concerns; the platform's own account mails leave it out (platform tenant) */
  tenantId?: string;
  recipient: NotificationRecipient;
  /** email (default), websocket, push or a channel the tenant registered */
  channel?: string;
  /** a stored template with its variables … */
  templateId?: string;
  variables?: Record<string, string | number | boolean>;
  /** … or the content itself: a text body and, for mail, an optional HTML alternative */
  subject?: string;
  body?: string;
  html?: string;
  /** extra mail headers, each named X-… (X-Platform-Purpose, X-Platform-Token); email only */
  headers?: Record<string, string>;
  priority?: 'low' | 'normal' | 'high' | 'critical';
  /** why it is sent (verify-email, password-reset, invite, …): kept in the notification's history */
  purpose: string;
  /** the platform context that sends it (identity, billing, files): the per-module rate limit's key */
  module: string;
}

export interface NotificationPort {
  /** notify: queued by the notification service; mail: handed to the mail port at once */
  readonly kind: 'notify' | 'mail';
  /** resolves once the message is queued (notify) or handed to the mail transport (mail) */
  send(notification: PlatformNotification): Promise<{ notificationId: string | null }>;
}

/** the port without the notification service: one mail through the mail port, no queue, no retries */
export const mailNotifications = (mail: Mailer): NotificationPort => ({
  kind: 'mail',
  async send(n) {
    if (!('address' in n.recipient))
      throw new Error('a recipient given by userId needs the notification service (notify) to find the address');
    if (n.templateId !== undefined) throw new Error('templates need the notification service (notify)');
    if (n.channel !== undefined && n.channel !== 'email')
      throw new Error(`channel ${n.channel} needs the notification service (notify)`);
    await mail.send({
      to: n.recipient.address,
      subject: n.subject ?? '',
      text: n.body ?? '',
      ...(n.html === undefined ? {} : { html: n.html }),
      ...(n.headers === undefined ? {} : { headers: n.headers }),
    });
    return { notificationId: null };
  },
});
