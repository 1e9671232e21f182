import { z } from 'zod';
import type { Kernel } from '../../../infra/kernel';
import type { Mailer } from '../../../infra/mail';
import { createSmtpMailer } from '../../../infra/mail/smtp';
import type { ChannelAdapter, DeliveryJob } from './adapter';
import { failure } from './adapter';

/** the Message-ID of a notification's mail: the same on every attempt, so a receiving side can see a duplicate */
export const messageIdOf = (notificationId: string, rootUrl: string): string =>
  `<${notificationId}@${new URL(rootUrl).hostname || 'platform'}>`;

/** headers every notification mail carries besides the sender's own */
export const deliveryHeaders = (job: DeliveryJob): Record<string, string> => ({
  ...job.message.headers,
  'X-Notification-Id': job.notificationId,
  'X-Notification-Attempt': String(job.attempt),
  ...(job.possibleDuplicate ? { 'X-Notification-Possible-Duplicate': 'true' } : {}),
});

/** the SMTP reply code of a failed send, looking through the guard's wrapping (infra/resilience/guard.ts) */
const smtpReplyOf = (error: unknown): number | null => {
  let e: unknown = error;
  for (let depth = 0; depth < 3 && e; depth += 1) {
    const code = (e as { responseCode?: unknown }).responseCode;
    if (typeof code === 'number') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return null;
};

/** SMTP answers 5xx for what will never succeed (unknown mailbox, refused content); 4xx and lost connections are worth a retry */
const isPermanent = (error: unknown): boolean => {
  const code = smtpReplyOf(error);
  return code !== null && code >= 500 && code < 600;
};

/** the guard's problem with the SMTP client's error under it ("smtp failed …: Message failed: 451 …") */
const describe = (error: unknown): string => {
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof Error
    ? `${(error as Error).message} ${cause.message}`
    : error instanceof Error
      ? error.message
      : String(error);
};

/** the guard's deadline passed (504): the server may have taken the message */
const outcomeUnknown = (error: unknown): boolean => (error as { status?: unknown }).status === 504;

const SmtpConfig = z
  .object({
    smtpUrl: z
      .string()
      .refine(
        (v) => URL.canParse(v) && /^smtps?:$/.test(new URL(v).protocol),
        'an smtp:// or smtps:// URL such as smtps://user:password@mail.example:465',
      ),
    from: z.string().min(3).max(254),
  })
  .strict();

/**
 * Mail: the kernel's mail port (SMTP with SMTP_URL, .eml files otherwise) for the built-in email
 * channel; a tenant's registered email channel brings its own SMTP server and sender.
 */
export const emailAdapter = (kernel: Kernel): ChannelAdapter => {
  const ownServers = new Map<string, Mailer>();
  const mailerOf = (job: DeliveryJob): Mailer => {
    if (!job.channel.id) return kernel.engines.mail;
    const key = `${job.tenantId}:${job.channel.id}`;
    let mailer = ownServers.get(key);
    if (!mailer) {
      const config = SmtpConfig.parse(job.channel.config);
      mailer = createSmtpMailer({ url: config.smtpUrl, from: config.from, timeoutMs: 10_000 });
      ownServers.set(key, mailer);
    }
    return mailer;
  };
  return {
    type: 'email',
    recipients: ['userId', 'address'],
    address: z.email({ message: 'must be an email address' }).max(254),
    config: SmtpConfig,
    secretFields: ['smtpUrl'],
    async send(job) {
      const m = job.message;
      if (!m.to) return failure('the notification has no email address', true);
      try {
        await mailerOf(job).send({
          to: m.to,
          subject: m.subject,
          text: m.text,
          ...(m.html === null ? {} : { html: m.html }),
          headers: deliveryHeaders(job),
          messageId: messageIdOf(job.notificationId, kernel.config.rootUrl),
        });
        return { ok: true };
      } catch (error) {
        return failure(describe(error), isPermanent(error), outcomeUnknown(error));
      }
    },
    async close() {
      for (const mailer of ownServers.values()) await mailer.close();
      ownServers.clear();
    },
  };
};
