import { z } from 'zod';
import type { Kernel } from '../../../infra/kernel';
import type { Mailer } from '../../../infra/mail';
import { createSmtpMailer } from '../../../infra/mail/smtp';
import { errorChain, outboundFailureText } from '../../../infra/security/outbound';
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

/** what nodemailer's error codes say, in words that name no server, address or banner */
const SMTP_FAILURES: Record<string, string> = {
  EAUTH: 'SMTP authentication failed',
  EPROTOCOL: 'the server did not answer as an SMTP server',
  EENVELOPE: 'SMTP envelope refused',
};

/**
 * What the tenant reads of a failed send (lastError, the attempt's event): the SMTP reply code and
 * its class, or a category of the connection's failure — never the server's reply text, greeting
 * or socket error (a tenant's URL pointing inside read an internal service's banner back through it).
 */
export const smtpFailureText = (error: unknown): string => {
  const code = smtpReplyOf(error);
  if (code !== null)
    return `SMTP ${code} (${code >= 500 ? 'refused' : code >= 400 ? 'temporarily refused' : 'unexpected reply'})`;
  const named = errorChain(error)
    .map((e) => (typeof e.code === 'string' ? SMTP_FAILURES[e.code] : undefined))
    .find(Boolean);
  return named ?? outboundFailureText(error);
};

/** the guard's deadline passed (504): the server may have taken the message */
const outcomeUnknown = (error: unknown): boolean => (error as { status?: unknown }).status === 504;

const SmtpConfig = z
  .object({
    // host, port and credentials only: nodemailer's URL options (?proxy=, ?sendmail=, ?tls.…) are not a tenant's to set
    smtpUrl: z
      .string()
      .refine(
        (v) =>
          URL.canParse(v) &&
          /^smtps?:$/.test(new URL(v).protocol) &&
          new URL(v).hostname !== '' &&
          !/[?#]/.test(v) &&
          ['', '/'].includes(new URL(v).pathname),
        'an smtp:// or smtps:// URL of a host, without a path or options, such as smtps://user:password@mail.example:465',
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
      // the tenant's server: reached through the outbound guard only
      mailer = createSmtpMailer({ url: config.smtpUrl, from: config.from, timeoutMs: 10_000, guard: kernel.outbound });
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
    destinations: (config) => [{ field: 'config.smtpUrl', url: String(config.smtpUrl) }],
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
        kernel.logger.warn(
          { err: error, tenantId: job.tenantId, notificationId: job.notificationId, channelId: job.channel.id },
          'email delivery attempt failed',
        );
        return failure(smtpFailureText(error), isPermanent(error), outcomeUnknown(error));
      }
    },
    async close() {
      for (const mailer of ownServers.values()) await mailer.close();
      ownServers.clear();
    },
  };
};
