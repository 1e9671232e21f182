import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFileMailer } from '../../../infra/mail/file';
import type { Mailer } from '../../../infra/mail/port';
import { createSmtpMailer } from '../../../infra/mail/smtp';
import { fixedClock } from '../../../infra/runtime/clock';
import { startSmtpCapture, type SmtpCapture } from '../../support/smtp-capture';

const FROM = 'Platform <no-reply@platform.test>';

describe('an SMTP mailer pointed at a running SMTP server', () => {
  let capture: SmtpCapture;
  let mailer: Mailer;

  beforeAll(async () => {
    capture = await startSmtpCapture();
    mailer = createSmtpMailer({ url: capture.url, from: FROM, timeoutMs: 2_000 });
  });
  afterAll(async () => {
    await mailer?.close();
    await capture?.close();
  });

  it('answers a ping', async () => {
    await expect(mailer.ping()).resolves.toBeUndefined();
  });

  it('delivers text, html and headers to every recipient, authenticated', async () => {
    const { messageId } = await mailer.send({
      to: ['ada@example.test', 'bob@example.test'],
      subject: 'Your invoice – März',
      text: 'Amount due: 12.00 EUR',
      html: '<p>Amount due: <b>12.00 EUR</b></p>',
      headers: { 'X-Platform-Notification': 'n-123' },
    });

    const mail = await capture.waitFor((m) => m.parsed.messageId === messageId);
    expect(mail.envelope).toEqual({ from: 'no-reply@platform.test', to: ['ada@example.test', 'bob@example.test'] });
    expect(mail.authUser).toBe('capture');
    expect(mail.parsed.subject).toBe('Your invoice – März');
    expect(mail.parsed.text?.trim()).toBe('Amount due: 12.00 EUR');
    expect(mail.parsed.html).toContain('<b>12.00 EUR</b>');
    expect(mail.parsed.headers.get('x-platform-notification')).toBe('n-123');
  });
});

describe('an SMTP mailer whose server is not there', () => {
  it('fails the ping and the send instead of hanging', async () => {
    const capture = await startSmtpCapture();
    const url = capture.url;
    await capture.close(); // the port is now closed
    const mailer = createSmtpMailer({ url, from: FROM, timeoutMs: 1_000 });
    await expect(mailer.ping()).rejects.toThrow();
    await expect(mailer.send({ to: 'x@example.test', subject: 's', text: 't' })).rejects.toThrow();
    await mailer.close();
  });
});

describe('a file mailer on an empty data folder', () => {
  let dataDir: string;
  let mailer: Mailer;
  const clock = fixedClock(new Date('2024-05-01T10:00:00.123Z'));

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'platform-mail-'));
    mailer = createFileMailer({ dataDir, from: FROM, clock });
  });
  afterAll(async () => {
    await mailer?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('answers a ping', async () => {
    await expect(mailer.ping()).resolves.toBeUndefined();
  });

  it('writes each message as a parsable .eml named by time and message id', async () => {
    const first = await mailer.send({
      to: 'ada@example.test',
      subject: 'First',
      text: 'one',
      headers: { 'X-Trace': 't-1' },
    });
    clock.advance(1_000);
    const second = await mailer.send({ to: 'bob@example.test', subject: 'Second', text: 'two', html: '<i>two</i>' });

    const files = (await readdir(join(dataDir, 'mail'))).sort();
    expect(files).toHaveLength(2);
    expect(files[0]).toMatch(/^20240501T100000123Z-.+\.eml$/);
    expect(files[1]).toMatch(/^20240501T100001123Z-.+\.eml$/);

    const raw = await readFile(join(dataDir, 'mail', files[0]!));
    expect(raw.includes('\r\n')).toBe(true); // RFC 5322 line ends
    const parsed = await simpleParser(raw);
    expect(parsed.messageId).toBe(first.messageId);
    expect(parsed.subject).toBe('First');
    expect(parsed.from?.value).toEqual([{ name: 'Platform', address: 'no-reply@platform.test' }]);
    expect(parsed.headers.get('x-trace')).toBe('t-1');
    expect(parsed.text?.trim()).toBe('one');

    const parsedSecond = await simpleParser(await readFile(join(dataDir, 'mail', files[1]!)));
    expect(parsedSecond.messageId).toBe(second.messageId);
    expect(parsedSecond.html).toContain('<i>two</i>');
  });
});
