import { randomUUID } from 'node:crypto';
import { pollUntil } from '../../support/poll';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configureMoney } from '../../../commands/money/context';
import { planLimitsKey } from '../../../commands/money/plan-limits';
import { AUDIT_TOPIC } from '../../../infra/audit';
import { expireDueHolds } from '../../../workers/money/hold-expiry';
import { fixedTestClock } from '../../support/clock';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import type { Body, MoneyClient } from '../../support/money';
import { moneyClient } from '../../support/money';
import { allInOneOnly } from '../../support/all-in-one-only';

const clock = fixedTestClock(new Date());
const startedAt = Date.now();
let platform: TestPlatform;
let c: MoneyClient;

const problem = (res: { status: number; body: Body; headers: Headers }, status: number, suffix: string) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers.get('content-type')).toContain('application/problem+json');
  expect(res.body.type).toMatch(new RegExp(`/${suffix}$`));
  expect(res.body.instance).toBeTruthy();
  expect(res.body.traceId).toBeTruthy();
};

const funded = async (amount = 1000, user = `u-${randomUUID()}`) => {
  const id = await c.openWallet(user);
  if (amount) expect((await c.post(`/wallets/${id}/credit`, { amount, currency: 'USD' })).status).toBe(200);
  return id;
};

beforeAll(async () => {
  platform = await startTestPlatform({ services: ['money'], clock });
  c = moneyClient(platform.url, 'tenant-a', 'u-admin', { members: platform.kernel.db });
});
afterAll(async () => {
  await platform?.close();
});

describe('wallets', () => {
  it('opens one wallet per user and currency (409 duplicate-wallet)', async () => {
    await c.member('dup');
    const res = await c.post('/wallets', { userId: 'dup', currency: 'USD', label: 'main' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      userId: 'dup',
      currency: 'USD',
      label: 'main',
      tenantId: 'tenant-a',
      balance: { available: 0, pending: 0, frozen: 0 },
    });
    problem(await c.post('/wallets', { userId: 'dup', currency: 'USD', label: 'again' }), 409, 'duplicate-wallet');
    expect((await c.post('/wallets', { userId: 'dup', currency: 'EUR', label: 'euro' })).status).toBe(201);
  });

  it('lets one of 10 concurrent openings of the same user and currency win', async () => {
    await c.member('racer');
    const results = await Promise.all(
      Array.from({ length: 10 }, () => c.post('/wallets', { userId: 'racer', currency: 'GBP' })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(9);
  });

  it('lists with filters and pages', async () => {
    await c.member('lister');
    for (const cur of ['AUD', 'CAD', 'CHF']) await c.post('/wallets', { userId: 'lister', currency: cur });
    const first = await c.get('/wallets?userId=lister&page_size=2');
    expect(first.body.data).toHaveLength(2);
    const second = await c.get(`/wallets?userId=lister&page_size=2&page_token=${first.body.next_page_token}`);
    expect(second.body.data).toHaveLength(1);
    expect(second.body.next_page_token).toBeUndefined();
    expect((await c.get('/wallets?userId=lister&currency=CAD')).body.data.map((w: Body) => w.currency)).toEqual([
      'CAD',
    ]);
  });

  it('reads a wallet and its balance; unknown ids are 404, malformed ones 400', async () => {
    const id = await funded(250);
    expect((await c.get(`/wallets/${id}`)).body).toMatchObject({ id, balance: { available: 250 } });
    expect((await c.get(`/wallets/${id}/balance`)).body).toEqual({ available: 250, pending: 0, frozen: 0 });
    problem(await c.get(`/wallets/${randomUUID()}`), 404, 'not-found');
    problem(await c.get('/wallets/not-a-uuid'), 400, 'validation-error');
  });
});

describe('amounts and bodies', () => {
  it.each([0, -5, 1.5, '100', null, true, { value: 1 }])(
    'refuses amount %j with 400 invalid-amount',
    async (amount) => {
      const id = await funded();
      problem(await c.post(`/wallets/${id}/credit`, { amount, currency: 'USD' }), 400, 'invalid-amount');
    },
  );

  it('refuses a missing amount, 2^63 and 1e19 with invalid-amount; 2^63 − 1 passes validation and meets the plan limit (402)', async () => {
    const id = await funded();
    problem(await c.post(`/wallets/${id}/debit`, { currency: 'USD' }), 400, 'invalid-amount');
    problem(
      await c.post(`/wallets/${id}/credit`, '{"amount": 9223372036854775808, "currency": "USD"}'),
      400,
      'invalid-amount',
    );
    problem(await c.post(`/wallets/${id}/credit`, '{"amount": 1e19, "currency": "USD"}'), 400, 'invalid-amount');
    const max = await c.post(`/wallets/${id}/credit`, '{"amount": 9223372036854775807, "currency": "USD"}');
    problem(max, 402, 'plan-limit-exceeded');
    expect(max.body).toMatchObject({ code: 'LIMIT_EXCEEDED', limit: 'maxTxAmount' });
  });

  // docs/decisions.md: an amount is a JSON integer written as plain digits
  it.each(['1e3', '1.0', '100.00', '1E2', '-0'])(
    'refuses the amount %s with 400 invalid-amount and moves nothing',
    async (literal) => {
      const id = await funded();
      problem(
        await c.post(`/wallets/${id}/credit`, `{"amount": ${literal}, "currency": "USD"}`),
        400,
        'invalid-amount',
      );
      expect((await c.get(`/wallets/${id}/balance`)).body.available).toBe(1000);
    },
  );

  it('stores and answers meta exactly as sent: big integers, number spellings, key order', async () => {
    const id = await funded();
    const meta = '{"order": 123456789012345678901234567890, "2": 1.0, "1": [1e3, 100.00], "note": "caf\\u00e9"}';
    const res = await c.post(`/wallets/${id}/credit`, `{"amount": 5, "currency": "USD", "meta": ${meta}}`);
    expect(res.status, res.text).toBe(200);
    expect(res.text).toContain(`"meta":${meta}`);
    expect(res.text).not.toContain('bigint:');
    const read = await c.get(`/transactions/${res.body.id}`);
    expect(read.text).toContain(`"meta":${meta}`);
    expect((await c.get(`/transactions?walletId=${id}&page_size=1`)).text).toContain(`"meta":${meta}`);
  });

  it('answers 400 to malformed JSON, wrong types and missing fields', async () => {
    const id = await funded();
    problem(await c.post(`/wallets/${id}/credit`, '{"amount": 1,'), 400, 'validation-error');
    problem(await c.post(`/wallets/${id}/credit`, { amount: 1 }), 400, 'validation-error');
    problem(await c.post(`/wallets/${id}/credit`, { amount: 1, currency: 12 }), 400, 'validation-error');
    problem(await c.post(`/wallets/${id}/credit`, { amount: 1, currency: 'USD', meta: 'x' }), 400, 'validation-error');
    problem(await c.post('/wallets', { currency: 'USD' }), 400, 'validation-error');
    problem(
      await c.post('/transfers', { fromWalletId: 'x', toWalletId: id, amount: 1, currency: 'USD' }),
      400,
      'validation-error',
    );
  });

  it('refuses text with a NUL character (reason, meta, label) with 400 and writes nothing', async () => {
    const id = await funded();
    const reason = await c.post(`/wallets/${id}/credit`, { amount: 5, currency: 'USD', reason: 'a\u0000b' });
    problem(reason, 400, 'validation-error');
    expect(reason.body.errors).toEqual([expect.objectContaining({ field: 'reason', code: 'NUL_CHARACTER' })]);
    problem(
      await c.post(`/wallets/${id}/debit`, { amount: 5, currency: 'USD', meta: { note: ['ok', 'x\u0000'] } }),
      400,
      'validation-error',
    );
    problem(
      await c.post('/wallets', { userId: 'nul-user', currency: 'USD', label: '\u0000' }),
      400,
      'validation-error',
    );
    expect((await c.get(`/wallets/${id}`)).body.balance.available).toBe(1000);
  });

  it("refuses a currency other than the wallet's", async () => {
    problem(
      await c.post(`/wallets/${await funded()}/credit`, { amount: 1, currency: 'EUR' }),
      400,
      'currency-mismatch',
    );
  });

  it('requires an Idempotency-Key (UUID) on every mutation', async () => {
    const id = await funded();
    problem(await c.call('POST', `/wallets/${id}/credit`, { amount: 1, currency: 'USD' }), 400, 'validation-error');
    problem(
      await c.post(`/wallets/${id}/credit`, { amount: 1, currency: 'USD' }, 'not-a-uuid'),
      400,
      'validation-error',
    );
    problem(await c.call('POST', '/wallets', { userId: 'x', currency: 'USD' }), 400, 'validation-error');
  });
});

describe('debits and plan limits', () => {
  it('refuses a debit above the available balance with 400 insufficient-funds', async () => {
    const id = await funded(100);
    problem(await c.post(`/wallets/${id}/debit`, { amount: 101, currency: 'USD' }), 400, 'insufficient-funds');
    const ok = await c.post(`/wallets/${id}/debit`, {
      amount: 100,
      currency: 'USD',
      reason: 'all',
      meta: { order: 7 },
    });
    expect(ok.body).toMatchObject({
      type: 'debit',
      status: 'completed',
      amount: 100,
      currency: 'USD',
      balanceAfter: { available: 0, pending: 0, frozen: 0 },
      meta: { order: 7 },
    });
  });

  it('refuses a credit that passes the maximum balance (402)', async () => {
    const id = await funded(0);
    for (let i = 0; i < 10; i += 1)
      expect((await c.post(`/wallets/${id}/credit`, { amount: 10_000_000, currency: 'USD' })).status).toBe(200);
    const res = await c.post(`/wallets/${id}/credit`, { amount: 1, currency: 'USD' });
    problem(res, 402, 'plan-limit-exceeded');
    expect(res.body.limit).toBe('maxBalance');
  });

  // configureMoney replaces the billing ports of the process that runs the handlers with functions
  allInOneOnly('replaces the billing port of the running process')(
    'fails closed with 503 billing-unavailable when billing is down and nothing is cached, and uses a stale value while it is down',
    async () => {
      let down = false;
      configureMoney(platform.kernel, {
        limitsSource: {
          fetch: async () => {
            if (down) throw new Error('billing down');
            return { maxTxAmount: 500n, maxBalance: 0n };
          },
        },
      });
      try {
        const other = moneyClient(platform.url, 'tenant-billing', 'u-admin', { members: platform.kernel.db });
        const id = await other.openWallet('b');
        expect((await other.post(`/wallets/${id}/credit`, { amount: 500, currency: 'USD' })).status).toBe(200);
        problem(
          await other.post(`/wallets/${id}/credit`, { amount: 501, currency: 'USD' }),
          402,
          'plan-limit-exceeded',
        );
        down = true;
        clock.advance(10 * 60_000);
        expect((await other.post(`/wallets/${id}/credit`, { amount: 5, currency: 'USD' })).status).toBe(200);
        await platform.kernel.engines.cache.del(planLimitsKey('tenant-billing'));
        const res = await other.post(`/wallets/${id}/credit`, { amount: 5, currency: 'USD' });
        problem(res, 503, 'billing-unavailable');
        expect(res.body.code).toBe('LIMITS_UNAVAILABLE');
        expect((await other.get(`/wallets/${id}/balance`)).body.available).toBe(505);
      } finally {
        configureMoney(platform.kernel);
      }
    },
  );

  allInOneOnly('replaces the subscription port of the running process')(
    'keeps debit, transfer, hold, confirm and cancel for a suspended subscription, and refuses credit',
    async () => {
      const a = await funded(100);
      const b = await funded(0);
      configureMoney(platform.kernel, { subscriptions: { statusOf: async () => 'suspended' } });
      try {
        problem(await c.post(`/wallets/${a}/credit`, { amount: 1, currency: 'USD' }), 402, 'subscription-suspended');
        expect((await c.post(`/wallets/${a}/debit`, { amount: 1, currency: 'USD' })).status).toBe(200);
        expect(
          (await c.post('/transfers', { fromWalletId: a, toWalletId: b, amount: 1, currency: 'USD' })).status,
        ).toBe(200);
        const h = await c.post(`/wallets/${a}/hold`, { amount: 1, currency: 'USD' });
        expect(h.status).toBe(200);
        expect((await c.post(`/holds/${h.body.id}/cancel`, {})).status).toBe(200);
      } finally {
        configureMoney(platform.kernel);
      }
    },
  );
});

describe('holds', () => {
  it('freezes, confirms once, and refuses a second resolution', async () => {
    const id = await funded(1000);
    const h = await c.post(`/wallets/${id}/hold`, { amount: 300, currency: 'USD', ttl: '2h', reason: 'checkout' });
    expect(h.body).toMatchObject({
      type: 'hold',
      status: 'held',
      amount: 300,
      balanceAfter: { available: 700, frozen: 300 },
    });
    expect(Date.parse(h.body.expiresAt) - Date.parse(h.body.createdAt)).toBe(2 * 3600_000);
    const confirmed = await c.post(`/holds/${h.body.id}/confirm`, { holdTransactionId: h.body.id });
    expect(confirmed.body).toMatchObject({
      type: 'confirm',
      status: 'completed',
      referenceTransactionId: h.body.id,
      balanceAfter: { available: 700, frozen: 0 },
    });
    expect((await c.get(`/transactions/${h.body.id}`)).body.status).toBe('confirmed');
    problem(await c.post(`/holds/${h.body.id}/cancel`, {}), 409, 'hold-already-resolved');
    problem(await c.post(`/holds/${h.body.id}/confirm`, {}), 409, 'hold-already-resolved');
  });

  it('defaults the TTL to 72 h and refuses more than 168 h or a bad duration', async () => {
    const id = await funded(1000);
    const h = await c.post(`/wallets/${id}/hold`, { amount: 1, currency: 'USD' });
    expect(Date.parse(h.body.expiresAt) - Date.parse(h.body.createdAt)).toBe(72 * 3600_000);
    problem(await c.post(`/wallets/${id}/hold`, { amount: 1, currency: 'USD', ttl: '169h' }), 400, 'validation-error');
    problem(await c.post(`/wallets/${id}/hold`, { amount: 1, currency: 'USD', ttl: 'soon' }), 400, 'validation-error');
    problem(await c.post(`/wallets/${id}/hold`, { amount: 1001, currency: 'USD' }), 400, 'insufficient-funds');
    problem(await c.post(`/holds/${randomUUID()}/confirm`, {}), 404, 'not-found');
    problem(await c.post(`/holds/${h.body.id}/confirm`, { holdTransactionId: randomUUID() }), 400, 'validation-error');
  });

  it('allows 100 concurrent holds per wallet, then 429 hold-limit-exceeded', async () => {
    const id = await funded(1000);
    for (let i = 0; i < 100; i += 1)
      expect((await c.post(`/wallets/${id}/hold`, { amount: 1, currency: 'USD' })).status).toBe(200);
    const refused = await c.post(`/wallets/${id}/hold`, { amount: 1, currency: 'USD' });
    problem(refused, 429, 'hold-limit-exceeded');
    // like every 429: Retry-After and retryAfter (here: until the first hold expires, 72 h by default)
    expect(Number(refused.headers.get('retry-after'))).toBe(72 * 3600);
    expect(refused.body.retryAfter).toBe(72 * 3600);
  });

  it('expires after the TTL: frozen returns, money.hold.expired is recorded, confirm and cancel answer 422', async () => {
    const id = await funded(1000);
    const h = await c.post(`/wallets/${id}/hold`, { amount: 400, currency: 'USD', ttl: '1h' });
    clock.advance(3600_000);
    problem(await c.post(`/holds/${h.body.id}/confirm`, {}), 422, 'hold-expired');
    await expireDueHolds(platform.kernel);
    await expireDueHolds(platform.kernel);
    expect((await c.get(`/wallets/${id}/balance`)).body).toEqual({ available: 1000, pending: 0, frozen: 0 });
    expect((await c.get(`/transactions/${h.body.id}`)).body.status).toBe('canceled');
    problem(await c.post(`/holds/${h.body.id}/cancel`, {}), 422, 'hold-expired');
    const { rows } = await platform.kernel.db.query<{ type: string; actor_id: string; data: Body }>(
      "SELECT type, actor_id, data FROM es.events WHERE type = 'money.hold.expired' AND data->>'holdTransactionId' = $1",
      [h.body.id],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      actor_id: 'system',
      data: { amount: '400', currency: 'USD', tenantId: 'tenant-a', walletId: id },
    });
    // and one audit record of the expiry on platform.audit.events (committed with it, relayed from the outbox)
    const audits = await pollUntil(
      async () =>
        (await auditEvents()).filter((e) => e.type === 'audit.record.created' && e.payload.entityId === h.body.id),
      (found) => found.length > 0,
      { timeoutMs: 20_000, what: 'the expiry audit record on platform.audit.events' },
    );
    expect(audits).toHaveLength(1);
    expect(audits[0]!.payload).toMatchObject({
      action: 'money.hold.expired',
      entityType: 'hold',
      tenantId: 'tenant-a',
      actorId: 'system',
      after: { status: 'canceled', resolution: 'expired' },
      meta: { walletId: id },
    });
  });
});

/** the audit records published since this file started (the topic of a shared Kafka holds every run's) */
const auditEvents = async (): Promise<{ type: string; payload: Body }[]> => {
  const log = platform.kernel.log;
  const events: { type: string; payload: Body }[] = [];
  const from = await log.offsetsForTime(AUDIT_TOPIC, startedAt);
  for (let p = 0; p < (await log.partitionsOf(AUDIT_TOPIC)); p += 1) {
    for (let offset = from[p] ?? 0; ;) {
      const records = await log.read(AUDIT_TOPIC, p, offset, 1000);
      if (records.length === 0) break;
      events.push(...records.map((r) => JSON.parse(r.value) as { type: string; payload: Body }));
      offset = records[records.length - 1]!.offset + 1;
    }
  }
  return events;
};

describe('transfers', () => {
  it('moves money atomically and lists it on both wallets', async () => {
    const a = await funded(500);
    const b = await funded(0);
    const t = await c.post('/transfers', {
      fromWalletId: a,
      toWalletId: b,
      amount: 200,
      currency: 'USD',
      reason: 'rent',
    });
    expect(t.body).toMatchObject({
      type: 'transfer',
      status: 'completed',
      walletId: a,
      fromWalletId: a,
      toWalletId: b,
      counterpartyWalletId: b,
      balanceAfter: { available: 300 },
    });
    expect((await c.get(`/wallets/${b}/balance`)).body.available).toBe(200);
    const leg = (await c.get(`/transactions?walletId=${b}`)).body.data[0];
    expect(leg).toMatchObject({ id: t.body.id, direction: 'in', walletId: b, balanceAfter: { available: 200 } });
  });

  it('refuses a transfer to itself, across currencies, above the balance, and of an unverified user', async () => {
    const a = await funded(100);
    const eur = await c.openWallet(`eur-${randomUUID()}`, 'EUR');
    problem(
      await c.post('/transfers', { fromWalletId: a, toWalletId: a, amount: 1, currency: 'USD' }),
      400,
      'self-transfer',
    );
    problem(
      await c.post('/transfers', { fromWalletId: a, toWalletId: eur, amount: 1, currency: 'USD' }),
      400,
      'currency-mismatch',
    );
    problem(
      await c.post('/transfers', { fromWalletId: a, toWalletId: await funded(0), amount: 101, currency: 'USD' }),
      400,
      'insufficient-funds',
    );
    problem(
      await c.post('/transfers', { fromWalletId: a, toWalletId: randomUUID(), amount: 1, currency: 'USD' }),
      404,
      'not-found',
    );
    const unverified = moneyClient(platform.url, 'tenant-a', 'u-unverified', { emailVerified: false });
    const res = await unverified.post('/transfers', {
      fromWalletId: a,
      toWalletId: await funded(0),
      amount: 1,
      currency: 'USD',
    });
    problem(res, 403, 'forbidden');
    expect(res.body.code).toBe('EMAIL_NOT_VERIFIED');
  });
});

describe('reversals', () => {
  it('reverses a completed debit once, with a counter-transaction', async () => {
    const id = await funded(100);
    const d = await c.post(`/wallets/${id}/debit`, { amount: 40, currency: 'USD' });
    const r = await c.post(`/transactions/${d.body.id}/reversal`, {
      originalTransactionId: d.body.id,
      reason: 'refund',
    });
    expect(r.body).toMatchObject({
      type: 'reversal',
      status: 'completed',
      amount: 40,
      referenceTransactionId: d.body.id,
      balanceAfter: { available: 100 },
    });
    expect((await c.get(`/transactions/${d.body.id}`)).body).toMatchObject({ status: 'reversed', reversed: true });
    problem(await c.post(`/transactions/${d.body.id}/reversal`, {}), 400, 'double-reversal');
  });

  it('lets one of 20 concurrent reversals of one transaction succeed', async () => {
    const id = await funded(100);
    const d = await c.post(`/wallets/${id}/debit`, { amount: 10, currency: 'USD' });
    const results = await Promise.all(
      Array.from({ length: 20 }, () => c.post(`/transactions/${d.body.id}/reversal`, {})),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 400 && r.body.type.endsWith('/double-reversal'))).toHaveLength(19);
    expect((await c.get(`/wallets/${id}/balance`)).body.available).toBe(100);
  });

  it('reverses a transfer on both wallets and a confirmed hold; refuses held and canceled holds', async () => {
    const a = await funded(300);
    const b = await funded(0);
    const t = await c.post('/transfers', { fromWalletId: a, toWalletId: b, amount: 100, currency: 'USD' });
    expect((await c.post(`/transactions/${t.body.id}/reversal`, {})).status).toBe(200);
    expect([
      (await c.get(`/wallets/${a}/balance`)).body.available,
      (await c.get(`/wallets/${b}/balance`)).body.available,
    ]).toEqual([300, 0]);
    const held = await c.post(`/wallets/${a}/hold`, { amount: 50, currency: 'USD' });
    problem(await c.post(`/transactions/${held.body.id}/reversal`, {}), 400, 'hold-not-reversible');
    await c.post(`/holds/${held.body.id}/confirm`, {});
    expect((await c.post(`/transactions/${held.body.id}/reversal`, {})).status).toBe(200);
    const canceled = await c.post(`/wallets/${a}/hold`, { amount: 50, currency: 'USD' });
    await c.post(`/holds/${canceled.body.id}/cancel`, {});
    problem(await c.post(`/transactions/${canceled.body.id}/reversal`, {}), 400, 'transaction-not-reversible');
    expect((await c.get(`/wallets/${a}/balance`)).body).toEqual({ available: 300, pending: 0, frozen: 0 });
  });

  it('refuses a credit whose funds were spent, and anything older than 365 days', async () => {
    const id = await funded(0);
    const cr = await c.post(`/wallets/${id}/credit`, { amount: 100, currency: 'USD' });
    await c.post(`/wallets/${id}/debit`, { amount: 60, currency: 'USD' });
    problem(await c.post(`/transactions/${cr.body.id}/reversal`, {}), 400, 'insufficient-funds');
    const old = await c.post(`/wallets/${id}/debit`, { amount: 10, currency: 'USD' });
    clock.advance(366 * 86_400_000);
    problem(await c.post(`/transactions/${old.body.id}/reversal`, {}), 400, 'reversal-window-expired');
    problem(await c.post(`/transactions/${randomUUID()}/reversal`, {}), 404, 'not-found');
  });
});

describe('idempotency', () => {
  it('replays the same response byte for byte and refuses another body with 409', async () => {
    const id = await funded(100);
    const key = randomUUID();
    const first = await c.post(`/wallets/${id}/debit`, { amount: 10, currency: 'USD' }, key);
    const again = await c.post(`/wallets/${id}/debit`, { currency: 'USD', amount: 10 }, key);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    problem(await c.post(`/wallets/${id}/debit`, { amount: 11, currency: 'USD' }, key), 409, 'idempotency-conflict');
    expect((await c.get(`/wallets/${id}/balance`)).body.available).toBe(90);
  });

  it('treats a key in upper case as the same key (UUIDs compare case-insensitively)', async () => {
    const id = await funded(0);
    const key = randomUUID();
    const first = await c.post(`/wallets/${id}/credit`, { amount: 10, currency: 'USD' }, key);
    expect(first.status).toBe(200);
    const again = await c.post(`/wallets/${id}/credit`, { amount: 10, currency: 'USD' }, key.toUpperCase());
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
    problem(
      await c.post(`/wallets/${id}/credit`, { amount: 11, currency: 'USD' }, key.toUpperCase()),
      409,
      'idempotency-conflict',
    );
    expect((await c.get(`/wallets/${id}/balance`)).body.available).toBe(10);
    expect((await c.get(`/transactions?walletId=${id}`)).body.data).toHaveLength(1);
  });

  it('executes 50 parallel identical requests under one key exactly once', async () => {
    const a = await funded(1000);
    const b = await funded(0);
    const key = randomUUID();
    const results = await Promise.all(
      Array.from({ length: 50 }, () =>
        c.post('/transfers', { fromWalletId: a, toWalletId: b, amount: 7, currency: 'USD' }, key),
      ),
    );
    const ok = results.filter((r) => r.status === 200);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(new Set(ok.map((r) => r.text)).size).toBe(1);
    for (const r of results.filter((x) => x.status !== 200)) problem(r, 409, 'idempotency-conflict');
    expect((await c.get(`/wallets/${b}/balance`)).body.available).toBe(7);
    expect((await c.get(`/transactions?walletId=${b}`)).body.data).toHaveLength(1);
  });
});

describe('tenancy', () => {
  it("answers 404 for another tenant's wallets, holds and transactions", async () => {
    const id = await funded(100);
    const h = await c.post(`/wallets/${id}/hold`, { amount: 1, currency: 'USD' });
    const other = moneyClient(platform.url, 'tenant-b', 'u-admin', { members: platform.kernel.db });
    const mine = await other.openWallet('intruder');
    problem(await other.get(`/wallets/${id}`), 404, 'not-found');
    problem(await other.get(`/wallets/${id}/balance`), 404, 'not-found');
    problem(await other.post(`/wallets/${id}/debit`, { amount: 1, currency: 'USD' }), 404, 'not-found');
    problem(
      await other.post('/transfers', { fromWalletId: id, toWalletId: mine, amount: 1, currency: 'USD' }),
      404,
      'not-found',
    );
    problem(await other.post(`/holds/${h.body.id}/confirm`, {}), 404, 'not-found');
    problem(await other.get(`/transactions/${h.body.id}`), 404, 'not-found');
    problem(await other.get(`/transactions?walletId=${id}`), 404, 'not-found');
    problem(await other.post(`/transactions/${h.body.id}/reversal`, {}), 404, 'not-found');
    expect((await other.get('/wallets')).body.data.map((w: Body) => w.id)).toEqual([mine]);
  });

  it('requires the permissions', async () => {
    const reader = moneyClient(platform.url, 'tenant-a', 'reader', { permissions: ['money.wallets.read'] });
    problem(await reader.post('/wallets', { userId: 'x', currency: 'USD' }), 403, 'forbidden');
    problem(await reader.get('/transactions'), 403, 'forbidden');
  });
});

describe('history', () => {
  it('filters by type, status and time and pages newest first', async () => {
    const id = await funded(100);
    for (let i = 0; i < 5; i += 1) {
      clock.advance(1000);
      await c.post(`/wallets/${id}/debit`, { amount: 1, currency: 'USD' });
    }
    const all = await c.get(`/transactions?walletId=${id}&type=debit`);
    expect(all.body.data).toHaveLength(5);
    const page = await c.get(`/transactions?walletId=${id}&type=debit&page_size=3`);
    const rest = await c.get(
      `/transactions?walletId=${id}&type=debit&page_size=3&page_token=${page.body.next_page_token}`,
    );
    expect([...page.body.data, ...rest.body.data].map((t: Body) => t.id)).toEqual(all.body.data.map((t: Body) => t.id));
    const since = all.body.data[1].createdAt;
    expect((await c.get(`/transactions?walletId=${id}&since=${encodeURIComponent(since)}`)).body.data).toHaveLength(2);
    expect(
      (await c.get(`/transactions?walletId=${id}&until=${encodeURIComponent(since)}&type=debit`)).body.data,
    ).toHaveLength(3);
    expect((await c.get(`/transactions?walletId=${id}&status=completed&type=credit`)).body.data).toHaveLength(1);
    const t = all.body.data[0];
    expect(Object.keys(t)).toEqual(
      expect.arrayContaining([
        'id',
        'walletId',
        'type',
        'status',
        'amount',
        'currency',
        'reason',
        'idempotencyKey',
        'referenceTransactionId',
        'reversed',
        'meta',
        'balanceAfter',
        'createdAt',
      ]),
    );
    expect(t.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('keeps the ledger balanced: entries sum to zero per tenant and currency, and wallets equal their entries', async () => {
    const { rows } = await platform.kernel.db.query<{ tenant_id: string; currency: string; sum: string }>(
      `SELECT tenant_id, data->>'currency' AS currency, sum((x->>'amount')::numeric)::text AS sum
       FROM es.events, jsonb_array_elements(data->'entries') x WHERE type LIKE 'money.%' GROUP BY 1, 2`,
    );
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) expect(r.sum).toBe('0');
    const { rows: mismatched } = await platform.kernel.db.query(
      `WITH ledger AS (SELECT e.tenant_id, split_part(x->>'account', ':', 2) AS wallet, split_part(x->>'account', ':', 3) AS bucket, sum((x->>'amount')::numeric) AS amount
         FROM es.events e, jsonb_array_elements(e.data->'entries') x WHERE e.type LIKE 'money.%' AND x->>'account' LIKE 'wallet:%' GROUP BY 1, 2, 3)
       SELECT w.id FROM rm.money_wallets w
       WHERE w.available <> COALESCE((SELECT amount FROM ledger l WHERE l.tenant_id = w.tenant_id AND l.wallet = w.id AND l.bucket = 'available'), 0)
          OR w.frozen <> COALESCE((SELECT amount FROM ledger l WHERE l.tenant_id = w.tenant_id AND l.wallet = w.id AND l.bucket = 'frozen'), 0)`,
    );
    expect(mismatched).toEqual([]);
  });
});

describe('history in ledger order', () => {
  it("lists a wallet's lines in ledger order after parallel credits: the newest balanceAfter is the balance, each line follows from the one before", async () => {
    for (let round = 0; round < 3; round += 1) {
      const id = await funded(0);
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => c.post(`/wallets/${id}/credit`, { amount: i + 1, currency: 'USD' })),
      );
      expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
      const lines: Body[] = [];
      let token: string | undefined;
      do {
        const page = await c.get(`/transactions?walletId=${id}&page_size=7${token ? `&page_token=${token}` : ''}`);
        expect(page.status).toBe(200);
        lines.push(...page.body.data);
        token = page.body.next_page_token;
      } while (token);
      expect(lines).toHaveLength(20);
      expect(lines[0].balanceAfter.available).toBe((await c.get(`/wallets/${id}/balance`)).body.available);
      for (let i = 0; i < lines.length - 1; i += 1)
        expect(lines[i].balanceAfter.available - lines[i].amount).toBe(lines[i + 1].balanceAfter.available);
      expect(lines[19].balanceAfter.available).toBe(lines[19].amount);
    }
  });

  it('keeps a page token pointing at the same place while new lines arrive', async () => {
    const id = await funded(0);
    for (let i = 1; i <= 4; i += 1) await c.post(`/wallets/${id}/credit`, { amount: i, currency: 'USD' });
    const first = await c.get(`/transactions?walletId=${id}&page_size=2`);
    await c.post(`/wallets/${id}/credit`, { amount: 100, currency: 'USD' });
    const second = await c.get(`/transactions?walletId=${id}&page_size=2&page_token=${first.body.next_page_token}`);
    expect([...first.body.data, ...second.body.data].map((t: Body) => t.amount)).toEqual([4, 3, 2, 1]);
  });
});

describe('bad list input', () => {
  const token = (cursor: unknown) => Buffer.from(JSON.stringify(cursor)).toString('base64url');
  it.each([
    ['a token of another shape', token({ x: 1 })],
    ['a cursor whose time is not a time', token({ c: 'yesterday', id: 'x' })],
    ['a cursor with year 0000', token({ c: '0000-01-01T00:00:00Z', id: '0190aaaa-0000-7000-8000-000000000000' })],
    ['a cursor whose id is an object', token({ c: '2026-01-01T00:00:00.000Z', id: { a: 1 } })],
    ['a cursor whose sequence is text', token({ s: 'x' })],
    ['a cursor with a NUL', token({ c: '2026-01-01T00:00:00.000Z', id: 'a\u0000b' })],
    ['not base64 JSON', '%%%'],
  ])('answers 400 validation-error to a page_token that is %s', async (_what, pageToken) => {
    const id = await funded(0);
    for (const path of [
      `/transactions?page_token=${pageToken}`,
      `/transactions?walletId=${id}&page_token=${pageToken}`,
    ]) {
      const res = await c.get(path);
      problem(res, 400, 'validation-error');
      expect(res.body.errors).toEqual([expect.objectContaining({ field: 'page_token' })]);
    }
  });

  it.each([
    '0000-01-01T00:00:00Z',
    '2026-01-01T00:00:00+16:00',
    '2026-01-01T00:00:00-23:59',
    '2026-02-30T00:00:00Z',
    'yesterday',
  ])('answers 400 validation-error to since or until %s', async (instant) => {
    for (const field of ['since', 'until']) {
      const res = await c.get(`/transactions?${field}=${encodeURIComponent(instant)}`);
      problem(res, 400, 'validation-error');
      expect(res.body.errors).toEqual([expect.objectContaining({ field })]);
    }
  });

  it('accepts offsets up to ±15:59 and the first and last years', async () => {
    for (const instant of [
      '2026-01-01T00:00:00+15:59',
      '2026-01-01T00:00:00-15:59',
      '0001-01-01T00:00:00Z',
      '9999-12-31T23:59:59Z',
    ]) {
      expect((await c.get(`/transactions?since=${encodeURIComponent(instant)}`)).status).toBe(200);
    }
  });

  it('answers 400 to a NUL character in a query filter', async () => {
    const res = await c.get('/wallets?userId=a%00b');
    problem(res, 400, 'validation-error');
    expect(res.body.errors).toEqual([expect.objectContaining({ field: 'userId', code: 'NUL_CHARACTER' })]);
  });
});

describe('history partitions', () => {
  it('creates the coming months and moves rows that landed in the default partition', async () => {
    clock.advance(200 * 86_400_000); // beyond the months a generation starts with
    const id = await funded(10);
    const d = await c.post(`/wallets/${id}/debit`, { amount: 1, currency: 'USD' });
    const generation = (
      await platform.kernel.db.query<{ g: number }>(
        "SELECT active_generation AS g FROM es.projections WHERE name = 'money.transactions'",
      )
    ).rows[0]!.g;
    const parent = `rm.money_transactions_g${generation}`;
    const where = async () =>
      (
        await platform.kernel.db.query<{ t: string }>(
          `SELECT tableoid::regclass::text AS t FROM ${parent} WHERE id = $1`,
          [d.body.id],
        )
      ).rows[0]?.t;
    expect(await where()).toBe(`${parent}_default`);
    const { ensureMonthlyPartitions, partitionName } = await import('../../../projections/money/partitions');
    expect(await ensureMonthlyPartitions(platform.kernel.db, clock.now())).toBeGreaterThan(0);
    expect(await where()).toBe(partitionName(parent, clock.now()));
    expect((await c.get(`/transactions/${d.body.id}`)).body.id).toBe(d.body.id);
    expect(await ensureMonthlyPartitions(platform.kernel.db, clock.now())).toBe(0);
  });
});
