import { access, constants, mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createTransport } from 'nodemailer';
import type { Clock } from '../runtime/clock';
import { systemClock } from '../runtime/clock';
import { toMessage, type Mailer } from './port';

export interface FileMailerOptions {
  /** the platform's data folder; messages go to <dataDir>/mail */
  dataDir: string;
  from: string;
  clock?: Clock;
}

/** 2024-05-01T10:00:00.123Z → 20240501T100000123Z: sorts by time as text, and is a valid file name everywhere */
const compactTime = (date: Date) => date.toISOString().replace(/[-:.]/g, '');
const fileSafe = (messageId: string) => messageId.replace(/^<|>$/g, '').replace(/[^A-Za-z0-9._@-]/g, '_');

/**
 * `npm start`: each message becomes one RFC 5322 file, <time>-<message id>.eml, so `ls` lists mail
 * in the order it was sent. CRLF line ends, as on the wire.
 */
export const createFileMailer = (options: FileMailerOptions): Mailer => {
  const folder = join(options.dataDir, 'mail');
  const clock = options.clock ?? systemClock;
  const composer = createTransport({ streamTransport: true, buffer: true, newline: 'windows' });

  return {
    kind: 'file',
    async send(mail) {
      const info = await composer.sendMail(toMessage(options.from, mail));
      const name = `${compactTime(clock.now())}-${fileSafe(info.messageId)}.eml`;
      await mkdir(folder, { recursive: true });
      // Written aside and renamed, so anything watching the folder never reads half a message.
      const partial = join(folder, `.${name}.partial`);
      await writeFile(partial, info.message as Buffer);
      await rename(partial, join(folder, name));
      return { messageId: info.messageId };
    },
    async ping() {
      await mkdir(folder, { recursive: true });
      await access(folder, constants.W_OK);
    },
    async close() {
      composer.close();
    },
  };
};
