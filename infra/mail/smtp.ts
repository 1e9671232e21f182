import { createTransport } from 'nodemailer';
import { parseConnectionUrl } from 'nodemailer/lib/shared';
import { toMessage, type Mailer } from './port';

export interface SmtpMailerOptions {
  /** SMTP_URL: smtp://user:pass@host:587 (STARTTLS when offered) or smtps://user:pass@host:465 */
  url: string;
  from: string;
  /** deadline for connecting, the greeting and each socket read; a slow relay fails the send instead of hanging it */
  timeoutMs?: number;
}

/** Production: nodemailer over SMTP. A failed send rejects; the delivery worker owns retries. */
export const createSmtpMailer = (options: SmtpMailerOptions): Mailer => {
  const timeout = options.timeoutMs ?? 10_000;
  // nodemailer's own URL parser, so its URL options (?pool=true, ?tls.rejectUnauthorized=…) keep working.
  const transport = createTransport({
    ...parseConnectionUrl(options.url),
    connectionTimeout: timeout,
    greetingTimeout: timeout,
    socketTimeout: timeout,
  });

  return {
    kind: 'smtp',
    async send(mail) {
      const info = await transport.sendMail(toMessage(options.from, mail));
      return { messageId: info.messageId };
    },
    async ping() {
      await transport.verify();
    },
    async close() {
      transport.close();
    },
  };
};
