import type { OutgoingMail } from '../../infra/mail';
import type { Kernel } from '../../infra/kernel';

/**
 * Mail leaves after the response: a slow SMTP server neither delays the answer nor, for the
 * anti-enumeration paths, tells by its timing whether a mail was sent at all. It goes through the
 * platform's notification port: queued with retries and a history where the notification service
 * runs, straight to the mail port otherwise.
 */
export const sendLater = (
  kernel: Kernel,
  mail: OutgoingMail | OutgoingMail[] | (() => Promise<OutgoingMail | OutgoingMail[] | null>),
): void => {
  setImmediate(() => {
    void (async () => {
      const made = typeof mail === 'function' ? await mail() : mail;
      for (const m of [made ?? []].flat()) {
        for (const address of [m.to].flat()) {
          await kernel.notifications.send({
            recipient: { address },
            subject: m.subject,
            body: m.text,
            ...(m.html === undefined ? {} : { html: m.html }),
            ...(m.headers === undefined ? {} : { headers: m.headers }),
            purpose: m.headers?.['X-Platform-Purpose'] ?? 'account',
            module: 'identity',
            priority: 'high',
          });
        }
      }
    })().catch((error: unknown) => kernel.logger.error({ err: error }, 'sending an identity mail failed'));
  });
};

/** the pages a mail's link opens (served by the platform under APP_URL unless APP_URL names a front end of your own) */
export type MailFlow = 'verify-email' | 'reset-password' | 'accept-invite' | 'confirm-email-change';

export const link = (kernel: Kernel, flow: MailFlow, token: string): string =>
  `${kernel.config.appUrl}/${flow}?token=${encodeURIComponent(token)}`;
