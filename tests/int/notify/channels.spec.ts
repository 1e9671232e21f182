import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import type { SmtpCapture } from '../../support/smtp-capture';
import { startSmtpCapture } from '../../support/smtp-capture';
import type { Answer, NotifyClient } from '../../support/notify';
import { eventually, notifyClient, seedMember } from '../../support/notify';

/** the channel registry: built-in channels, channels a tenant registers, secrets sealed and redacted */
let platform: TestPlatform;
let platformSmtp: SmtpCapture;
let tenantSmtp: SmtpCapture;
let c: NotifyClient;

const problem = (res: Answer, status: number, suffix: string) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.type).toMatch(new RegExp(`/${suffix}$`));
};

beforeAll(async () => {
  platformSmtp = await startSmtpCapture();
  tenantSmtp = await startSmtpCapture();
  platform = await startTestPlatform({
    services: ['notify'],
    env: { SMTP_URL: platformSmtp.url, NOTIFY_POLL_INTERVAL_MS: '20' },
  });
  c = notifyClient(platform.url, 'acme');
  await seedMember(platform.kernel.db, 'acme', 'ann');
});
afterAll(async () => {
  await platform?.close();
  await platformSmtp?.close();
  await tenantSmtp?.close();
});

describe('the channels', () => {
  it('lists the built-in channels for a tenant that registered none', async () => {
    const res = await c.get('/notify/channels');
    expect(res.status).toBe(200);
    expect(
      res.body.data.map((ch: { name: string; builtIn: boolean; status: string }) => [ch.name, ch.builtIn, ch.status]),
    ).toEqual([
      ['email', true, 'active'],
      ['websocket', true, 'active'],
      ['push', true, 'active'],
    ]);
  });

  it("registers an email channel with the tenant's own SMTP server: the URL sealed, redacted on read, mail sent through it", async () => {
    const smtpUrl = tenantSmtp.url.replace('capture:secret', 'acme:hunter2');
    const res = await c.post('/notify/channels', {
      name: 'Acme Mail',
      type: 'email',
      config: { smtpUrl, from: 'news@acme.example' },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({
      name: 'Acme Mail',
      type: 'email',
      status: 'active',
      builtIn: false,
      config: { smtpUrl: '[redacted]', from: 'news@acme.example' },
    });
    const listed = await c.get('/notify/channels');
    expect(listed.body.data.at(-1)).toEqual(res.body);
    const stored = await platform.kernel.db.query<{ sealed: string }>('SELECT sealed FROM notify.channel_secrets');
    expect(stored.rows[0]!.sealed).not.toContain('hunter2');
    expect(JSON.stringify((await platform.kernel.db.query('SELECT data FROM es.events')).rows)).not.toContain(
      'hunter2',
    );

    const sent = await c.post('/notify', {
      channel: 'acme mail',
      recipient: { userId: 'ann' },
      subject: 'From Acme',
      body: 'hello',
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    expect(sent.body.channel).toBe('Acme Mail');
    const mail = await tenantSmtp.waitFor((m) => m.parsed.subject === 'From Acme');
    expect(mail.authUser).toBe('acme');
    expect(mail.envelope.from).toBe('news@acme.example');
    expect(platformSmtp.messages.filter((m) => m.parsed.subject === 'From Acme')).toEqual([]);
    await eventually(
      async () => (await c.get(`/notify/${sent.body.notificationId}`)).body.status === 'delivered',
      'delivered',
    );
    expect((await c.get('/notify?channel=Acme%20Mail')).body.data).toHaveLength(1);
  });

  it('refuses an unknown type, a bad config, a taken name and a built-in name; another tenant does not see the channel', async () => {
    problem(await c.post('/notify/channels', { name: 'sms', type: 'sms', config: {} }), 400, 'validation-error');
    const bad = await c.post('/notify/channels', {
      name: 'broken',
      type: 'email',
      config: { smtpUrl: 'ftp://x', from: 'a@b.c' },
    });
    problem(bad, 400, 'validation-error');
    expect(bad.body.errors[0].field).toBe('config.smtpUrl');
    problem(
      await c.post('/notify/channels', {
        name: 'ACME MAIL',
        type: 'email',
        config: { smtpUrl: tenantSmtp.url, from: 'a@b.c' },
      }),
      409,
      'conflict',
    );
    problem(
      await c.post('/notify/channels', {
        name: 'Email',
        type: 'email',
        config: { smtpUrl: tenantSmtp.url, from: 'a@b.c' },
      }),
      409,
      'conflict',
    );
    const other = notifyClient(platform.url, 'other-tenant');
    expect((await other.get('/notify/channels')).body.data).toHaveLength(3);
    problem(
      await other.post('/notify', { channel: 'Acme Mail', recipient: { address: 'x@example.test' }, body: 'x' }),
      404,
      'channel-not-found',
    );
  });

  it("shows the tenant a category of a failed send, never the words of the server its URL points at (an inside service's banner)", async () => {
    // development and test let a tenant's URL reach loopback (OUTBOUND_ALLOW_PRIVATE): what it reads back must still be generic
    const banners = [
      'SSH-2.0-OpenSSH_9.6 internal-db-01.corp secret-7731',
      '554 internal-db-01.corp secret-7731 go away',
    ];
    const services = await Promise.all(
      banners.map(async (banner) => {
        const server = createServer((socket) => {
          socket.on('error', () => undefined);
          socket.end(`${banner}\r\n`);
        });
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
        return server;
      }),
    );
    const t = notifyClient(platform.url, 'banner-tenant');
    try {
      const errors: string[] = [];
      for (const [i, server] of services.entries()) {
        const name = `inside-${i}-${Date.now()}`;
        const port = (server.address() as AddressInfo).port;
        const made = await t.post('/notify/channels', {
          name,
          type: 'email',
          config: { smtpUrl: `smtp://127.0.0.1:${port}`, from: 'a@b.example' },
        });
        expect(made.status, JSON.stringify(made.body)).toBe(201);
        const sent = await t.post('/notify', { channel: name, recipient: { address: 'x@example.test' }, body: 'x' });
        errors.push(
          await eventually(async () => {
            const n = (await t.get(`/notify/${sent.body.notificationId}`)).body;
            return n.lastError ? (n.lastError as string) : undefined;
          }, 'the attempt to fail'),
        );
      }
      expect(errors).toEqual(['the server did not answer as an SMTP server', 'SMTP 554 (refused)']);
      for (const e of errors) expect(e).not.toMatch(/secret|internal|127\.0\.0\.1|SSH/);
    } finally {
      for (const server of services) server.close();
    }
  });

  it('pages the registered channels after the built-in ones', async () => {
    for (const name of ['b-chan', 'c-chan'])
      expect((await c.post('/notify/channels', { name, type: 'websocket' })).status).toBe(201);
    const first = await c.get('/notify/channels?page_size=4');
    expect(first.body.data.map((ch: { name: string }) => ch.name)).toEqual(['email', 'websocket', 'push', 'Acme Mail']);
    const second = await c.get(`/notify/channels?page_size=4&page_token=${first.body.next_page_token}`);
    expect(second.body.data.map((ch: { name: string }) => ch.name)).toEqual(['b-chan', 'c-chan']);
    expect(second.body.next_page_token).toBeUndefined();
    // a page smaller than the built-in channels still reaches every channel
    const names: string[] = [];
    let token: string | undefined;
    do {
      const page = await c.get(`/notify/channels?page_size=2${token ? `&page_token=${token}` : ''}`);
      names.push(...page.body.data.map((ch: { name: string }) => ch.name));
      token = page.body.next_page_token;
    } while (token);
    expect(names).toEqual(['email', 'websocket', 'push', 'Acme Mail', 'b-chan', 'c-chan']);
  });
});

describe('templates', () => {
  it("are listed and read back; names are unique per tenant; a template's channel must exist", async () => {
    const made = await c.post('/notify/templates', {
      name: 'Digest',
      channel: 'email',
      subject: 'Your {{period}} digest',
      body: '{{count}} updates',
    });
    expect(made.status).toBe(201);
    problem(await c.post('/notify/templates', { name: 'digest', channel: 'email', body: 'x' }), 409, 'conflict');
    problem(
      await c.post('/notify/templates', { name: 'nowhere', channel: 'fax', body: 'x' }),
      404,
      'channel-not-found',
    );
    problem(
      await c.post('/notify/templates', {
        name: 'undeclared',
        channel: 'email',
        body: '{{a}} {{b}}',
        variables: ['a'],
      }),
      400,
      'validation-error',
    );
    expect((await c.get(`/notify/templates/${made.body.id}`)).body).toEqual(made.body);
    expect((await c.get('/notify/templates')).body.data).toEqual([made.body]);
    problem(
      await notifyClient(platform.url, 'other-tenant').get(`/notify/templates/${made.body.id}`),
      404,
      'template-not-found',
    );
    problem(
      await c.post('/notify', {
        channel: 'websocket',
        recipient: { userId: 'ann' },
        templateId: made.body.id,
        variables: { period: 'weekly', count: 3 },
      }),
      400,
      'validation-error',
    );
  });
});
