import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configureNotify, notifyContext } from '../../../commands/notify/context';
import { fixedClock } from '../../../infra/runtime/clock';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import type { CapturedMail, SmtpCapture } from '../../support/smtp-capture';
import { startSmtpCapture } from '../../support/smtp-capture';
import type { Answer, NotifyClient } from '../../support/notify';
import { eventsOf, eventually, idempotent, notifyClient, notifyServices, seedMember } from '../../support/notify';

const clock = fixedClock(new Date('2026-03-02T09:00:00.000Z'));
let platform: TestPlatform;
let smtp: SmtpCapture;
let tenantCount = 0;

/** a tenant of its own (rate limits and queue caps are per tenant), with one member */
const tenant = async (): Promise<{ id: string; c: NotifyClient; member: string }> => {
  const id = `tenant-${(tenantCount += 1)}`;
  await seedMember(platform.kernel.db, id, `${id}-ada`);
  return { id, c: notifyClient(platform.url, id), member: `${id}-ada` };
};

const problem = (res: Answer, status: number, suffix: string) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers.get('content-type')).toContain('application/problem+json');
  expect(res.body.type).toMatch(new RegExp(`/${suffix}$`));
};

const statusOf = async (c: NotifyClient, id: string) => (await c.get(`/notify/${id}`)).body;
const until = (c: NotifyClient, id: string, status: string) =>
  eventually(async () => {
    const n = await statusOf(c, id);
    return n.status === status ? n : undefined;
  }, `notification ${id} ${status}`);
const mailOf = (id: string, from: readonly CapturedMail[]) =>
  from.filter((m) => m.parsed.headers.get('x-notification-id') === id);

beforeAll(async () => {
  smtp = await startSmtpCapture();
  platform = await startTestPlatform({ services: notifyServices, env: { SMTP_URL: smtp.url }, clock });
  configureNotify(platform.kernel, { settings: { pollIntervalMs: 20 }, random: () => 0.5 });
});
afterAll(async () => {
  await platform?.close();
  await smtp?.close();
});

describe('an email from a template', () => {
  it('reaches the SMTP server rendered, values HTML-escaped in the HTML body, the subject one line', async () => {
    const { c, member } = await tenant();
    const template = await c.post('/notify/templates', {
      name: 'welcome',
      channel: 'email',
      format: 'html',
      subject: 'Welcome {{name}}',
      body: '<p>Hello {{name}}, your plan is <b>{{plan}}</b>.</p>',
    });
    expect(template.status, JSON.stringify(template.body)).toBe(201);
    expect(template.body).toMatchObject({
      name: 'welcome',
      channel: 'email',
      format: 'html',
      variables: ['name', 'plan'],
    });

    const name = 'Ada <img src=x onerror=alert(1)>\r\nBcc: everyone@example.test';
    const sent = await c.post('/notify', {
      channel: 'email',
      recipient: { userId: member },
      templateId: template.body.id,
      variables: { name, plan: 'Pro & more' },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    expect(sent.body).toEqual({
      notificationId: expect.any(String),
      status: 'queued',
      channel: 'email',
      createdAt: clock.now().toISOString(),
    });

    const mail = await smtp.waitFor((m) => m.parsed.headers.get('x-notification-id') === sent.body.notificationId);
    expect(mail.envelope.to).toEqual([`${member}@example.test`]);
    expect(mail.parsed.subject).toBe('Welcome Ada <img src=x onerror=alert(1)> Bcc: everyone@example.test');
    expect(mail.parsed.headers.get('bcc')).toBeUndefined();
    expect(mail.parsed.html).toContain('<p>Hello Ada &lt;img src=x onerror=alert(1)&gt;');
    expect(mail.parsed.html).toContain('your plan is <b>Pro &amp; more</b>.</p>');
    expect(mail.parsed.html).not.toContain('<img');
    expect(mail.parsed.text).toContain('Hello Ada <img src=x onerror=alert(1)>');
    expect(mail.parsed.messageId).toBe(`<${sent.body.notificationId}@127.0.0.1>`);
    expect(mail.parsed.headers.get('x-notification-attempt')).toBe('1');

    const delivered = await until(c, sent.body.notificationId, 'delivered');
    expect(delivered).toMatchObject({
      channel: 'email',
      recipient: { userId: member, address: `${member}@example.test` },
      retries: 0,
      templateId: template.body.id,
      failedAt: null,
    });
    expect(delivered.deliveredAt).toBe(clock.now().toISOString());
  });

  it('refuses a missing variable with 400 template-variable-missing naming it, and sends nothing', async () => {
    const { c, member } = await tenant();
    const template = await c.post('/notify/templates', {
      name: 'reset',
      channel: 'email',
      subject: 'Code {{code}}',
      body: 'Hi {{name}}, use {{code}}.',
    });
    const before = smtp.messages.length;
    const res = await c.post('/notify', {
      channel: 'email',
      recipient: { userId: member },
      templateId: template.body.id,
      variables: { name: 'Ada' },
    });
    problem(res, 400, 'template-variable-missing');
    expect(res.body.missing).toEqual(['code']);
    expect(res.body.errors).toEqual([expect.objectContaining({ field: 'variables.code', code: 'VARIABLE_MISSING' })]);
    expect((await c.get('/notify')).body.data).toEqual([]);
    expect(smtp.messages.length).toBe(before);
  });

  it('answers 404 template-not-found, 404 channel-not-found, 404 for a recipient who is not a member, 400 for a subject with a line break', async () => {
    const { c, member } = await tenant();
    problem(
      await c.post('/notify', { channel: 'email', recipient: { userId: member }, templateId: 'nope' }),
      404,
      'template-not-found',
    );
    problem(
      await c.post('/notify', { channel: 'carrier-pigeon', recipient: { userId: member }, body: 'x' }),
      404,
      'channel-not-found',
    );
    const stranger = await c.post('/notify', {
      channel: 'email',
      recipient: { userId: 'someone-of-another-tenant' },
      body: 'x',
    });
    problem(stranger, 404, 'not-found');
    expect(stranger.body.errors).toEqual([expect.objectContaining({ field: 'recipient.userId' })]);
    problem(
      await c.post('/notify', {
        channel: 'email',
        recipient: { address: 'a@example.test' },
        subject: 'Hi\r\nBcc: x@example.test',
        body: 'x',
      }),
      400,
      'validation-error',
    );
    problem(
      await c.post('/notify', { channel: 'email', recipient: { address: 'not an address' }, body: 'x' }),
      400,
      'validation-error',
    );
    problem(await c.post('/notify', { channel: 'email', recipient: {}, body: 'x' }), 400, 'validation-error');
    problem(
      await c.post('/notify', { channel: 'email', recipient: { address: 'a@example.test' } }),
      400,
      'validation-error',
    );
    problem(
      await c.post('/notify', { channel: 'websocket', recipient: { address: 'a@example.test' }, body: 'x' }),
      400,
      'validation-error',
    );
  });

  it('keeps the answer of an Idempotency-Key: the same notification, sent once', async () => {
    const { c, member } = await tenant();
    const key = idempotent();
    const first = await c.post(
      '/notify',
      { channel: 'email', recipient: { userId: member }, subject: 'Once', body: 'only once' },
      key,
    );
    const second = await c.post(
      '/notify',
      { channel: 'email', recipient: { userId: member }, subject: 'Once', body: 'only once' },
      key,
    );
    expect(first.status).toBe(202);
    expect(second.status).toBe(202);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body).toEqual(first.body);
    await until(c, first.body.notificationId, 'delivered');
    expect((await c.get('/notify')).body.data).toHaveLength(1);
    expect(mailOf(first.body.notificationId, smtp.messages)).toHaveLength(1);
  });
});

describe('a batch', () => {
  it('queues one notification per recipient with their own variables', async () => {
    const { id, c, member } = await tenant();
    await seedMember(platform.kernel.db, id, 'grace');
    const template = await c.post('/notify/templates', {
      name: 'hello',
      channel: 'email',
      subject: 'Hi {{name}}',
      body: 'Plan {{plan}}',
    });
    const res = await c.post('/notify/batch', {
      channel: 'email',
      templateId: template.body.id,
      variables: { plan: 'Pro' },
      recipients: [
        { userId: member, variables: { name: 'Ada' } },
        { userId: 'grace', variables: { name: 'Grace' } },
        { address: 'ext@example.test', variables: { name: 'Ext', plan: 'Free' } },
      ],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body.count).toBe(3);
    const mails = await Promise.all(
      res.body.ids.map((n: string) => smtp.waitFor((m) => m.parsed.headers.get('x-notification-id') === n)),
    );
    expect(mails.map((m) => [m.envelope.to[0], m.parsed.subject, m.parsed.text?.trim()])).toEqual([
      [`${member}@example.test`, 'Hi Ada', 'Plan Pro'],
      ['grace@example.test', 'Hi Grace', 'Plan Pro'],
      ['ext@example.test', 'Hi Ext', 'Plan Free'],
    ]);
  });

  it('refuses more than 500 recipients with 400 batch-limit-exceeded, and an unknown recipient by its index', async () => {
    const { c, member } = await tenant();
    const many = Array.from({ length: 501 }, (_, i) => ({ address: `r${i}@example.test` }));
    const over = await c.post('/notify/batch', { channel: 'email', body: 'x', recipients: many });
    problem(over, 400, 'batch-limit-exceeded');
    expect(over.body).toMatchObject({ max: 500, given: 501 });
    const unknown = await c.post('/notify/batch', {
      channel: 'email',
      body: 'x',
      recipients: [{ userId: member }, { userId: 'ghost' }],
    });
    problem(unknown, 404, 'not-found');
    expect(unknown.body.errors.map((e: { field: string }) => e.field)).toEqual(['recipients[1].recipient.userId']);
    expect((await c.get('/notify')).body.data).toEqual([]);
  });
});

describe('a failing SMTP server', () => {
  it('gets 5 retries at 30, 60, 120, 240 and 480 s (clock moved), then the notification is failed; a retry queues it again and it is delivered', async () => {
    const { c, member } = await tenant();
    smtp.behaviour.refuse = { code: 451, message: 'Requested action aborted: try again later' };
    try {
      const sent = await c.post('/notify', {
        channel: 'email',
        recipient: { userId: member },
        subject: 'Retry me',
        body: 'eventually',
      });
      const id = sent.body.notificationId as string;
      const waits: number[] = [];
      for (let attempt = 1; attempt <= 6; attempt += 1) {
        const events = await eventually(async () => {
          const e = await eventsOf(platform.kernel.db, member.replace(/-ada$/, ''), id);
          const last = e.at(-1);
          return last &&
            (last.type === 'notify.notification.attempt_failed' || last.type === 'notify.notification.failed') &&
            last.data.attempt === attempt
            ? e
            : undefined;
        }, `attempt ${attempt} to fail`);
        const last = events.at(-1)!;
        if (last.type === 'notify.notification.failed') break;
        const retryAt = Date.parse(last.data.failedAt) + last.data.retryInMs;
        waits.push((retryAt - clock.now().getTime()) / 1000);
        const queued = await statusOf(c, id);
        expect(queued.status).toBe('queued');
        expect(queued.nextAttemptAt).toBe(new Date(retryAt).toISOString());
        // not a moment before its time
        clock.advance(retryAt - clock.now().getTime() - 1000);
        // deliberately let the workers poll once: nothing may be sent before the retry time (an absence)
        await new Promise((r) => setTimeout(r, 150));
        expect(mailOf(id, smtp.refused)).toHaveLength(attempt);
        clock.advance(1000);
      }
      expect(waits).toEqual([30, 60, 120, 240, 480]);
      const failed = await until(c, id, 'failed');
      expect(failed).toMatchObject({ retries: 5, failedAt: clock.now().toISOString() });
      expect(failed.lastError).toContain('451');
      const attempts = mailOf(id, smtp.refused);
      expect(attempts.map((m) => m.parsed.headers.get('x-notification-attempt'))).toEqual([
        '1',
        '2',
        '3',
        '4',
        '5',
        '6',
      ]);
      expect(new Set(attempts.map((m) => m.parsed.messageId))).toEqual(new Set([`<${id}@127.0.0.1>`]));
      const listed = await c.get('/notify/failed?channel=email');
      expect(listed.body.data.map((n: { id: string }) => n.id)).toEqual([id]);

      smtp.behaviour.refuse = null;
      const retried = await c.post(`/notify/${id}/retry`);
      expect(retried.status, JSON.stringify(retried.body)).toBe(202);
      expect(retried.body).toEqual({ notificationId: id, status: 'queued' });
      const delivered = await until(c, id, 'delivered');
      expect(delivered).toMatchObject({ failedAt: null, retries: 6 });
      expect(mailOf(id, smtp.messages)).toHaveLength(1);
      problem(await c.post(`/notify/${id}/retry`), 400, 'notification-not-failed');
      expect((await c.get('/notify/failed')).body.data).toEqual([]);
    } finally {
      smtp.behaviour.refuse = null;
    }
  });

  it('that refuses the mailbox for good (5xx) fails the notification at once, without retries', async () => {
    const { c, member } = await tenant();
    smtp.behaviour.refuse = { code: 550, message: 'No such user here' };
    try {
      const sent = await c.post('/notify', {
        channel: 'email',
        recipient: { userId: member },
        subject: 'Bounce',
        body: 'x',
      });
      const failed = await until(c, sent.body.notificationId, 'failed');
      expect(failed.retries).toBe(0);
      expect(failed.lastError).toContain('550');
      expect(mailOf(sent.body.notificationId, smtp.refused)).toHaveLength(1);
    } finally {
      smtp.behaviour.refuse = null;
    }
  });
});

describe("a tenant's queue", () => {
  it('holds at most NOTIFY_QUEUE_MAX_PER_TENANT notifications: more is 503 queue-full, nothing of the refused request written', async () => {
    const { id, c, member } = await tenant();
    const ctx = notifyContext(platform.kernel);
    configureNotify(platform.kernel, { settings: { queueMaxPerTenant: 4 } });
    smtp.behaviour.refuse = { code: 451, message: 'busy' };
    try {
      for (let i = 0; i < 4; i += 1)
        expect(
          (await c.post('/notify', { channel: 'email', recipient: { userId: member }, body: `n${i}` })).status,
        ).toBe(202);
      const full = await c.post('/notify', { channel: 'email', recipient: { userId: member }, body: 'one too many' });
      problem(full, 503, 'queue-full');
      expect(full.headers.get('retry-after')).toBe('60');
      problem(
        await c.post('/notify', { channel: 'email', recipient: { userId: member }, body: 'with a key' }, idempotent()),
        503,
        'queue-full',
      );
      problem(
        await c.post('/notify/batch', { channel: 'email', body: 'x', recipients: [{ userId: member }] }),
        503,
        'queue-full',
      );
      expect((await c.get('/notify?page_size=100')).body.data).toHaveLength(4);
      const other = await tenant();
      expect(
        (
          await other.c.post('/notify', {
            channel: 'email',
            recipient: { userId: other.member },
            body: 'another tenant',
          })
        ).status,
      ).toBe(202);
      expect(id).not.toBe(other.id);
    } finally {
      smtp.behaviour.refuse = null;
      configureNotify(platform.kernel, { settings: { queueMaxPerTenant: ctx.settings.queueMaxPerTenant } });
    }
  });
});

describe('the history', () => {
  it("lists newest first with filters and pages, answers another tenant's id with 404, and publishes notify.notification.sent", async () => {
    const { c, member } = await tenant();
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      ids.push(
        (
          await c.post('/notify', {
            channel: 'email',
            recipient: { userId: member },
            subject: `h${i}`,
            body: 'x',
            meta: { order: i },
          })
        ).body.notificationId,
      );
      clock.advance(1000);
    }
    for (const n of ids) await until(c, n, 'delivered');
    const first = await c.get('/notify?page_size=2&status=delivered&channel=email');
    expect(first.body.data.map((n: { id: string }) => n.id)).toEqual([ids[2], ids[1]]);
    expect(first.body.data[0].meta).toEqual({ order: 2 });
    const second = await c.get(`/notify?page_size=2&status=delivered&page_token=${first.body.next_page_token}`);
    expect(second.body.data.map((n: { id: string }) => n.id)).toEqual([ids[0]]);
    expect(
      (
        await c.get(
          `/notify?until=${encodeURIComponent(new Date(Date.parse(first.body.data[1].createdAt)).toISOString())}`,
        )
      ).body.data.map((n: { id: string }) => n.id),
    ).toEqual([ids[0]]);
    problem(await c.get('/notify?page_token=bogus'), 400, 'validation-error');

    const other = await tenant();
    problem(await other.c.get(`/notify/${ids[0]}`), 404, 'not-found');
    problem(await other.c.post(`/notify/${ids[0]}/retry`), 404, 'not-found');
    expect((await other.c.get('/notify')).body.data).toEqual([]);

    const published = await eventually(async () => {
      const { rows } = await platform.kernel.db.query<{ value: string }>(
        `SELECT value FROM log.records WHERE topic = 'platform.notify.events' AND key = $1 ORDER BY "offset"`,
        [ids[0]],
      );
      const types = rows.map((r) => (JSON.parse(r.value) as { type: string }).type);
      return types.includes('notify.notification.sent') ? types : undefined;
    }, 'notify.notification.sent on platform.notify.events');
    expect(published).toEqual([
      'notify.notification.queued',
      'notify.notification.sending',
      'notify.notification.sent',
    ]);
  });

  it('refuses callers without the permission', async () => {
    const reader = notifyClient(platform.url, 'tenant-x', 'reader', ['notify.read']);
    problem(
      await reader.post('/notify', { channel: 'email', recipient: { address: 'a@example.test' }, body: 'x' }),
      403,
      'forbidden',
    );
    problem(await reader.post('/notify/templates', { name: 'n', channel: 'email', body: 'x' }), 403, 'forbidden');
    const sender = notifyClient(platform.url, 'tenant-x', 'sender', ['notify.send']);
    problem(await sender.get('/notify'), 403, 'forbidden');
  });
});
