import type { OutgoingMail } from '../../infra/mail';
import type { Kernel } from '../../infra/kernel';

/**
 * Mail leaves after the response: a slow SMTP server neither delays the answer nor, for the
 * anti-enumeration paths, tells by its timing whether a mail was sent at all.
 */
export const sendLater = (kernel: Kernel, mail: OutgoingMail | (() => Promise<OutgoingMail | OutgoingMail[] | null>)): void => {
  setImmediate(() => {
    void (async () => {
      const made = typeof mail === 'function' ? await mail() : mail;
      for (const m of [made ?? []].flat()) await kernel.engines.mail.send(m);
    })().catch((error: unknown) => kernel.logger.error({ err: error }, 'sending an identity mail failed'));
  });
};

export const link = (kernel: Kernel, path: string, token: string): string => `${kernel.config.rootUrl}${path}?token=${encodeURIComponent(token)}`;
