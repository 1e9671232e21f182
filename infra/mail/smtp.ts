import { createTransport } from 'nodemailer';
import { parseConnectionUrl } from 'nodemailer/lib/shared';
import type { SMTPTransportOptions } from 'nodemailer/lib/smtp-transport';
import type { OutboundGuard } from '../security/outbound';
import { toMessage, type Mailer } from './port';

export interface SmtpMailerOptions {
  /** SMTP_URL: smtp://user:pass@host:587 (STARTTLS when offered) or smtps://user:pass@host:465 */
  url: string;
  from: string;
  /** deadline for connecting, the greeting and each socket read; a slow relay fails the send instead of hanging it */
  timeoutMs?: number;
  /**
   * A server a tenant gave (a registered email channel): its connection goes through the outbound
   * guard, and the URL gives host, port, TLS and credentials only — nodemailer's URL options
   * (?proxy=, ?sendmail=, ?tls.…, ?localAddress=) are the operator's, never a tenant's.
   */
  guard?: OutboundGuard;
}

/** host, port, TLS mode and credentials of an smtp(s):// URL, nothing else */
export const tenantSmtpOptions = (url: string) => {
  const u = new URL(url);
  const secure = u.protocol === 'smtps:';
  return {
    host: u.hostname.replace(/^\[|\]$/g, ''),
    port: u.port ? Number(u.port) : secure ? 465 : 587,
    secure,
    ...(u.username || u.password
      ? { auth: { user: decodeURIComponent(u.username), pass: decodeURIComponent(u.password) } }
      : {}),
  };
};

/** Production: nodemailer over SMTP. A failed send rejects; the delivery worker owns retries. */
export const createSmtpMailer = (options: SmtpMailerOptions): Mailer => {
  const timeout = options.timeoutMs ?? 10_000;
  const guard = options.guard;
  const target = guard ? tenantSmtpOptions(options.url) : null;
  // the socket comes from the guard, which checks the address it is about to use (no DNS rebinding)
  const getSocket: SMTPTransportOptions['getSocket'] =
    guard && target
      ? (_options, callback) => {
          guard.connect(target.host, target.port, timeout).then(
            (connection) => callback(null, { connection }),
            (error: Error) => callback(error),
          );
        }
      : undefined;
  // nodemailer's own URL parser for the platform's SMTP_URL, so its URL options (?pool=true, ?tls.rejectUnauthorized=…) keep working
  const settings: SMTPTransportOptions = {
    ...(target ?? parseConnectionUrl(options.url)),
    ...(getSocket ? { getSocket } : {}),
    connectionTimeout: timeout,
    greetingTimeout: timeout,
    socketTimeout: timeout,
  };
  const transport = createTransport(settings);

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
