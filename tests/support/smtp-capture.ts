import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface CapturedMail {
  /** SMTP envelope: MAIL FROM and every RCPT TO, as the client sent them */
  envelope: { from: string | null; to: string[] };
  /** user name of the AUTH the client did, if any */
  authUser: string | null;
  raw: Buffer;
  parsed: ParsedMail;
}

/** how the capture answers each message's DATA; change it while a test runs */
export interface SmtpBehaviour {
  /** refuse every message with this SMTP reply (4xx: try again later, 5xx: never) instead of accepting it */
  refuse: { code: number; message: string } | null;
  /** keep the client waiting this long for the answer to DATA, after the message was received and kept */
  delayMs: number;
}

export interface SmtpCapture {
  /** smtp://user:pass@127.0.0.1:<port>: plain SMTP, any credentials accepted */
  url: string;
  port: number;
  readonly messages: readonly CapturedMail[];
  /** messages answered with the refusal of behaviour.refuse */
  readonly refused: readonly CapturedMail[];
  behaviour: SmtpBehaviour;
  /** resolves with the first captured message (past or future) matching, rejects after timeoutMs */
  waitFor(predicate: (mail: CapturedMail) => boolean, timeoutMs?: number): Promise<CapturedMail>;
  close(): Promise<void>;
}

/**
 * An in-process SMTP server that keeps what it receives, for tests of code that sends mail.
 * A real SMTP conversation (smtp-server) and a real MIME parse (mailparser): what a test sees
 * is what a mail server would have received. No TLS: STARTTLS is not offered, AUTH works in plain.
 */
export const startSmtpCapture = async (): Promise<SmtpCapture> => {
  const messages: CapturedMail[] = [];
  const refused: CapturedMail[] = [];
  const waiters = new Set<() => void>();
  const behaviour: SmtpBehaviour = { refuse: null, delayMs: 0 };

  const server = new SMTPServer({
    authOptional: true,
    allowInsecureAuth: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onAuth(auth, _session, callback) {
      callback(null, { user: auth.username });
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('error', callback);
      stream.on('end', () => {
        const raw = Buffer.concat(chunks);
        simpleParser(raw).then(
          (parsed) => {
            const from = session.envelope.mailFrom;
            const mail: CapturedMail = {
              envelope: { from: from ? from.address : null, to: session.envelope.rcptTo.map((r) => r.address) },
              authUser: typeof session.user === 'string' ? session.user : null,
              raw,
              parsed,
            };
            const refusal = capture.behaviour.refuse;
            if (refusal) {
              refused.push(mail);
              for (const wake of waiters) wake();
              return callback(Object.assign(new Error(refusal.message), { responseCode: refusal.code }));
            }
            messages.push(mail);
            for (const wake of waiters) wake();
            if (capture.behaviour.delayMs > 0) setTimeout(() => callback(), capture.behaviour.delayMs);
            else callback();
          },
          (error: Error) => callback(error),
        );
      });
    },
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.server.address() as AddressInfo;

  // a mail crosses the log, a worker and a delivery queue: seconds on a quiet machine, far more on a
  // loaded one (a split run's beforeAll failed at the old 5 s); the wait ends as soon as it arrives
  const waitFor: SmtpCapture['waitFor'] = (predicate, timeoutMs = 60_000) =>
    new Promise((resolve, reject) => {
      const check = () => {
        const found = messages.find(predicate);
        if (!found) return;
        finish();
        resolve(found);
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`no matching mail within ${timeoutMs} ms (${messages.length} captured)`));
      }, timeoutMs);
      const finish = () => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
      check();
    });

  const capture: SmtpCapture = {
    url: `smtp://capture:secret@127.0.0.1:${port}`,
    port,
    messages,
    refused,
    behaviour,
    waitFor,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  return capture;
};
