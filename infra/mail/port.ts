/**
 * Outgoing mail. SMTP in production; for `npm start`, .eml files under the data folder, so a
 * developer opens what would have been sent in any mail client. Both build the message with
 * nodemailer, so the bytes on disk are the bytes an SMTP server would receive.
 */
export interface OutgoingMail {
  to: string | string[];
  subject: string;
  text: string;
  html?: string;
  /** extra headers, e.g. List-Unsubscribe or an idempotency marker */
  headers?: Record<string, string>;
  /** the Message-ID, angle brackets included; generated when absent */
  messageId?: string;
}

export interface SentMail {
  /** the Message-ID header, angle brackets included */
  messageId: string;
}

export interface Mailer {
  readonly kind: 'file' | 'smtp';
  send(mail: OutgoingMail): Promise<SentMail>;
  /** throws when mail cannot be handed on (SMTP server unreachable, folder not writable) */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export const toMessage = (from: string, mail: OutgoingMail) => ({
  from,
  to: mail.to,
  subject: mail.subject,
  text: mail.text,
  ...(mail.html === undefined ? {} : { html: mail.html }),
  ...(mail.headers === undefined ? {} : { headers: mail.headers }),
  ...(mail.messageId === undefined ? {} : { messageId: mail.messageId }),
});
