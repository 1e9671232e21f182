import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billingContext } from '../../../commands/billing/context';
import { applyProviderCommands, createSubscription } from '../../../commands/billing/handlers';
import { FREE_PLAN_ID } from '../../../domain/billing/plan';
import { systemMeta } from '../../../infra/kernel';
import { BILLING_PERMISSIONS, recordServiceEvent, seedTenant } from '../../support/billing';
import { escalate, eventually, operatorPlan } from '../../support/billing-http';
import { offsetClock } from '../../support/clock';
import { clamdEnv, filesClient, waitForStatus } from '../../support/files';
import { MONEY_PERMISSIONS, moneyClient, seedMember } from '../../support/money';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import { testToken } from '../../support/auth';

/**
 * The gateway's billing checks (spec 001, Limit enforcement flow): a suspended tenant gets 402 on
 * mutations while its money debit passes, a terminated one 402 on every request, a tenant at a
 * plan limit 402 plan-limit-exceeded on the route that creates that resource (members, stored
 * bytes: real uploads, scanned by clamd and counted by billing from the files events); a plan change
 * reaches the gateway's caches through the log.
 */
const DAY = 86_400_000;
const clock = offsetClock();
let p: TestPlatform;

const http = async (
  method: string,
  path: string,
  token: string,
  body?: unknown,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
): Promise<{ status: number; body: any }> => {
  const res = await p.http(`/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      'idempotency-key': randomUUID(),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
};

const tenantWithTrial = async (planId = FREE_PLAN_ID) => {
  const { tenantId } = await seedTenant(p.kernel.db);
  const s = await p.kernel.commands.run(systemMeta(tenantId), (uow) =>
    createSubscription(uow, billingContext(p.kernel), { tenantId, planId, externalId: null }),
  );
  const token = testToken(tenantId, 'u-admin', [
    ...BILLING_PERMISSIONS,
    ...MONEY_PERMISSIONS,
    'users.create',
    'users.list',
  ]);
  return { tenantId, subscriptionId: s.id, token };
};

/** the provider reports a failed payment: past_due from now (as webhook processing applies it) */
const paymentFailed = (tenantId: string) =>
  p.kernel.commands.run(systemMeta(tenantId), (uow) =>
    applyProviderCommands(uow, billingContext(p.kernel), tenantId, [
      { type: 'RecordPaymentFailure', now: clock.now().toISOString() },
    ]),
  );

beforeAll(async () => {
  p = await startTestPlatform({
    services: ['identity', 'billing', 'money', 'files'],
    clock,
    env: { BILLING_ESCALATION_INTERVAL_SEC: '3600', ...clamdEnv(), FILES_WORKER_POLL_MS: '50' },
  });
});
afterAll(async () => {
  await p?.close();
});

describe('a suspended tenant', () => {
  it('gets 402 subscription-suspended on POST /v1/users while its money debit passes; reads pass', async () => {
    const t = await tenantWithTrial();
    const money = moneyClient(p.url, t.tenantId, 'u-admin', { members: p.kernel.db });
    const walletId = await money.openWallet('u-admin');
    expect((await money.post(`/wallets/${walletId}/credit`, { amount: 1000, currency: 'USD' })).status).toBe(200);
    await paymentFailed(t.tenantId);
    try {
      clock.advance(8 * DAY + 60_000);
      await escalate(p.kernel);
      await eventually(
        () => http('GET', `/billing/subscriptions/${t.subscriptionId}`, t.token),
        (r) => r.body.status === 'suspended',
        5_000,
        'suspended',
      );
      const refused = await eventually(
        () => http('POST', '/users', t.token, { email: `${randomUUID()}@example.test` }),
        (r) => r.status === 402,
        5_000,
        'POST /users refused',
      );
      expect(refused.body.type).toMatch(/\/subscription-suspended$/);
      expect((await money.post(`/wallets/${walletId}/debit`, { amount: 100, currency: 'USD' })).status).toBe(200);
      expect((await money.post(`/wallets/${walletId}/credit`, { amount: 100, currency: 'USD' })).status).toBe(402);
      expect((await money.get(`/wallets/${walletId}`)).status).toBe(200);
    } finally {
      clock.reset();
    }
  });
});

describe('a canceled or terminated tenant', () => {
  it('gets 402 subscription-terminated on a GET; its billing stays readable', async () => {
    const t = await tenantWithTrial();
    expect((await http('DELETE', `/billing/subscriptions/${t.subscriptionId}`, t.token)).body.cancelAtPeriodEnd).toBe(
      true,
    );
    const money = moneyClient(p.url, t.tenantId, 'u-admin', { members: p.kernel.db });
    expect((await money.get('/wallets')).status).toBe(200);
    try {
      clock.advance(15 * DAY);
      await escalate(p.kernel);
      const refused = await eventually(
        () => money.get('/wallets'),
        (r) => r.status === 402,
        5_000,
        'GET /wallets refused',
      );
      expect(refused.body.type).toMatch(/\/subscription-terminated$/);
      expect(refused.body.status).toBe(402);
      const sub = await http('GET', `/billing/subscriptions/${t.subscriptionId}`, t.token);
      expect(sub.body.status).toBe('canceled');
    } finally {
      clock.reset();
    }
  });
});

describe('a tenant at its users limit', () => {
  it('gets 402 plan-limit-exceeded on POST /v1/users; an upgrade lifts it', async () => {
    const t = await tenantWithTrial();
    for (let i = 0; i < 5; i += 1) {
      const userId = `member-${i}`;
      await seedMember(p.kernel.db, t.tenantId, userId);
      await recordServiceEvent(p.kernel, t.tenantId, userId, 'auth.member.added', {
        userId,
        tenantId: t.tenantId,
        roleIds: [],
        via: 'test',
      });
    }
    const refused = await eventually(
      () => http('POST', '/users', t.token, { email: `${randomUUID()}@example.test` }),
      (r) => r.status === 402,
      5_000,
      'POST /users refused',
    );
    expect(refused.body).toMatchObject({ status: 402, currentUsage: 5, limit: 5, resource: 'users' });
    expect(refused.body.type).toMatch(/\/plan-limit-exceeded$/);
    // other routes of the tenant are not counted
    expect((await http('GET', '/billing/usage', t.token)).body.usage.users).toBe(5);
    const bigger = await operatorPlan(p.kernel, { priceCents: 0, limits: { users: 50 } });
    expect(
      (await http('PATCH', `/billing/subscriptions/${t.subscriptionId}`, t.token, { planId: bigger.id, version: 1 }))
        .status,
    ).toBe(200);
    const after = await eventually(
      () => http('POST', '/users', t.token, { email: `${randomUUID()}@example.test` }),
      (r) => r.status !== 402,
      5_000,
      'the upgrade seen',
    );
    expect(after.status).not.toBe(402);
  });
});

describe('a tenant at its storage limit', () => {
  it('gets 402 plan-limit-exceeded on upload and presign once its stored bytes reach the limit; other tenants upload', async () => {
    // given a tenant on a plan of 5,000 bytes with one 4,096-byte file stored
    const small = await operatorPlan(p.kernel, { priceCents: 0, limits: { storageBytes: 5_000 } });
    const t = await tenantWithTrial(small.id);
    const files = filesClient(p.url, t.tenantId);
    const upload = (bytes: number) => files.upload(randomBytes(bytes), { originalName: 'part.bin' });
    const first = await upload(4_096);
    expect(first.status, first.text).toBe(201);
    await waitForStatus(files, first.body.id, 'available');

    // when it uploads while below the limit, then again once at or above it
    const below = await eventually(
      async () => (await http('GET', '/billing/usage', t.token)).body,
      (u) => u.usage.storageBytes === 4_096,
      10_000,
      'the first file counted',
    );
    expect(below.limits.storageBytes).toBe(5_000);
    const second = await upload(4_096);
    expect(second.status, second.text).toBe(201);
    await waitForStatus(files, second.body.id, 'available');
    // the gateway's cached answer goes with billing's count (log-delivered): until then an upload may
    // still pass, so a few small ones can land before the first refusal
    const refused = await eventually(
      () => upload(10),
      (r) => r.status === 402,
      10_000,
      'an upload refused',
    );

    // then the upload and the presign are refused with the figures, and a refused one stages nothing
    expect(refused.body).toMatchObject({ status: 402, resource: 'storage_bytes', limit: 5_000 });
    expect(refused.body.currentUsage).toBeGreaterThanOrEqual(8_192);
    expect(refused.body.type).toMatch(/\/plan-limit-exceeded$/);
    const stored = async () =>
      (
        await Promise.all(
          ['available', 'pending_scan'].map((status) => files.get(`/files?status=${status}&page_size=100`)),
        )
      ).reduce((n, page) => n + (page.body.data as unknown[]).length, 0);
    const before = await stored();
    expect((await upload(10)).status).toBe(402);
    const presign = await files.post('/files/presign', {
      bucket: 'documents',
      originalName: 'a.bin',
      mimeType: 'application/octet-stream',
      sizeBytes: 10,
    });
    expect(presign.status).toBe(402);
    expect(presign.body.type).toMatch(/\/plan-limit-exceeded$/);
    expect(await stored()).toBe(before);
    // another tenant on the free plan (1 GiB) uploads
    const other = await tenantWithTrial();
    expect((await filesClient(p.url, other.tenantId).upload(randomBytes(10))).status).toBe(201);
  });
});

describe('REST and permissions', () => {
  it("lists plans and the tenant's subscription, 403 without billing.view, 404 for another tenant", async () => {
    const t = await tenantWithTrial();
    const other = await tenantWithTrial();
    const plans = await http('GET', '/billing/plans', t.token);
    expect(plans.status).toBe(200);
    expect(plans.body.data.find((x: { id: string }) => x.id === FREE_PLAN_ID)).toMatchObject({
      name: 'free',
      interval: 'monthly',
      price: 0,
      limits: { users: 5 },
    });
    const subs = await http('GET', `/billing/subscriptions?tenant_id=${t.tenantId}`, t.token);
    expect(subs.body.data).toEqual([
      expect.objectContaining({
        id: t.subscriptionId,
        tenantId: t.tenantId,
        status: 'trialing',
        version: 1,
        cancelAtPeriodEnd: false,
        pendingChange: null,
      }),
    ]);
    expect((await http('GET', `/billing/subscriptions?tenantId=${other.tenantId}`, t.token)).status).toBe(404);
    expect((await http('GET', `/billing/subscriptions/${other.subscriptionId}`, t.token)).status).toBe(404);
    expect(
      (
        await http('PATCH', `/billing/subscriptions/${other.subscriptionId}`, t.token, {
          planId: FREE_PLAN_ID,
          version: 1,
        })
      ).status,
    ).toBe(404);
    const noView = testToken(t.tenantId, 'u-x', []);
    const forbidden = await http('GET', '/billing/plans', noView);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.type).toMatch(/\/forbidden$/);
    expect((await http('POST', '/billing/subscriptions', t.token, { planId: FREE_PLAN_ID })).status).toBe(409);
    expect((await http('GET', `/billing/plans/${randomUUID()}`, t.token)).status).toBe(404);
  });

  it('concurrent PATCHes with one version: exactly one wins, the rest 409 optimistic-lock-conflict', async () => {
    const t = await tenantWithTrial();
    const plans = await Promise.all([1, 2, 3, 4, 5, 6].map((i) => operatorPlan(p.kernel, { priceCents: i * 100 })));
    const answers = await Promise.all(
      plans.map((plan) =>
        http('PATCH', `/billing/subscriptions/${t.subscriptionId}`, t.token, { planId: plan.id, version: 1 }),
      ),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    const losers = answers.filter((a) => a.status !== 200);
    expect(losers).toHaveLength(5);
    for (const l of losers) {
      expect(l.status).toBe(409);
      expect(l.body.type).toMatch(/\/optimistic-lock-conflict$/);
    }
    const now = await http('GET', `/billing/subscriptions/${t.subscriptionId}`, t.token);
    expect(now.body.version).toBe(2);
    expect(now.body.planId).toBe(answers.find((a) => a.status === 200)!.body.planId);
  });

  it('a downgrade is pending until the period ends; a second change is 409 plan-change-in-progress; cancel-downgrade clears it', async () => {
    const big = await operatorPlan(p.kernel, { priceCents: 0, limits: { users: 100 } });
    const small = await operatorPlan(p.kernel, { priceCents: 0, limits: { users: 10 } });
    const t = await tenantWithTrial(big.id);
    const down = await http('PATCH', `/billing/subscriptions/${t.subscriptionId}`, t.token, {
      planId: small.id,
      version: 1,
    });
    expect(down.body).toMatchObject({ planId: big.id, version: 2, pendingChange: { planId: small.id } });
    // creation is held to the lower plan at once (spec 001 rule 2)
    expect((await http('GET', '/billing/usage', t.token)).body.limits.users).toBe(10);
    const second = await http('PATCH', `/billing/subscriptions/${t.subscriptionId}`, t.token, {
      planId: FREE_PLAN_ID,
      version: 2,
    });
    expect(second.status).toBe(409);
    expect(second.body.type).toMatch(/\/plan-change-in-progress$/);
    const cleared = await http('POST', `/billing/subscriptions/${t.subscriptionId}/cancel-downgrade`, t.token, {
      reason: 'changed my mind',
    });
    expect(cleared.body).toMatchObject({ pendingChange: null, version: 3 });
    const again = await http('POST', `/billing/subscriptions/${t.subscriptionId}/cancel-downgrade`, t.token, {});
    expect(again.status).toBe(422);
    expect(again.body.type).toMatch(/\/invalid-transition$/);
  });
});
