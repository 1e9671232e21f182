import type { Mailer } from './port';
import { createFileMailer } from './file';
import { createSmtpMailer } from './smtp';

export type { Mailer, OutgoingMail, SentMail } from './port';

/** SMTP when SMTP_URL is configured, .eml files under the data folder otherwise. */
export const createMailer = (config: { smtpUrl?: string; mailFrom: string; dataDir: string }): Mailer =>
  config.smtpUrl
    ? createSmtpMailer({ url: config.smtpUrl, from: config.mailFrom })
    : createFileMailer({ dataDir: config.dataDir, from: config.mailFrom });
