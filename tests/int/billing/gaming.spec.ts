import { randomUUID } from 'node:crypto';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billingContext } from '../../../commands/billing/context';
import { createSubscription } from '../../../commands/billing/handlers';
import { processWebhooks } from '../../../commands/billing/webhooks';
import { FREE_PLAN_ID } from '../../../domain/billing/plan';
import { PLATFORM_TENANT_ID } from '../../../domain/identity/constants';
import { isDomainError } from '../../../domain/shared/errors';
import { systemMeta } from '../../../infra/kernel';
import { testToken } from '../../support/auth';
import { BILLING_PERMISSIONS, seedTenant } from '../../support/billing';
import { escalate, eventually, operatorPlan } from '../../support/billing-http';
import { offsetClock } from '../../support/clock';
import { MONEY_PERMISSIONS } from '../../support/money';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

/**
 * Billing cannot be gamed (issue 22): a trial is granted once per tenant, whatever it cancels and
 * chooses again; a terminated tenant comes back only through the platform owner's recovery (its
 * POST /billing/subscriptions is 402 like every other request); an externalId — the payment
 * provider's subscription id, which decides whose subscription a payment activates — is unique
 * across tenants and set only by the provider's verified webhooks or the platform owner.
 */
const DAY = 86_400_000;
const STRIPE_SECRET = `whsec_${randomUUID().replace(/-/g, '')}`;
const stripe = new Stripe('sk_test_unused');
const clock = offsetClock();
let p: TestPlatform;
let paidPlanId: string;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Res = { status: number; body: any };

const http = async (method: string, path: string, token: string, body?: unknown): Promise<Res> => {
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

const ownerToken = () => testToken(PLATFORM_TENANT_ID, 'u-platform-owner', ['platform.*']);

interface Tenant {
  tenantId: string;
  subscriptionId: string;
  token: string;
}

/** a tenant with its automatic trial (as billing gives every new tenant), on the plan named */
const tenantWithTrial = async (planId = FREE_PLAN_ID, externalId: string | null = null): Promise<Tenant> => {
  const { tenantId } = await seedTenant(p.kernel.db);
  const s = await p.kernel.commands.run(systemMeta(tenantId), (uow) =>
    createSubscription(uow, billingContext(p.kernel), { tenantId, planId, externalId, automatic: true }),
  );
  const token = testToken(tenantId, 'u-admin', [...BILLING_PERMISSIONS, ...MONEY_PERMISSIONS]);
  return { tenantId, subscriptionId: s.id, token };
};

const current = async (t: Tenant): Promise<Record<string, unknown>> => {
  const res = await http('GET', '/billing/subscriptions', t.token);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return [...(res.body.data as { createdAt: string }[])].sort((a, b) => b.createdAt.localeCompare(a.createdAt))[0]!;
};

const statusOf = async (tenantId: string): Promise<string> =>
  (
    await p.kernel.db.query<{ status: string }>(
      'SELECT status FROM rm.billing_subscriptions WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1',
      [tenantId],
    )
  ).rows[0]!.status;

/** moves the clock and runs the escalation worker until the tenant's subscription has the status */
const escalateTo = async (t: Tenant, status: string, ms: number) => {
  clock.advance(ms);
  await eventually(
    async () => {
      await escalate(p.kernel);
      return statusOf(t.tenantId);
    },
    (s) => s === status,
    20_000,
    `${status}`,
  );
};

/** a tenant whose subscription was canceled and whose period ended (status canceled, access blocked) */
const canceledTenant = async (): Promise<Tenant> => {
  const t = await tenantWithTrial();
  const canceled = await http('DELETE', `/billing/subscriptions/${t.subscriptionId}`, t.token);
  expect(canceled.status, JSON.stringify(canceled.body)).toBe(200);
  await escalateTo(t, 'canceled', 15 * DAY);
  return t;
};

/** access as the gateway grants it: a read of another service (money) */
const wallets = (t: Tenant) => http('GET', '/wallets', t.token);

const stripeEvent = (type: string, object: Record<string, unknown>) => {
  const raw = JSON.stringify({
    id: `evt_${randomUUID().replace(/-/g, '')}`,
    object: 'event',
    type,
    data: { object },
  });
  return {
    raw,
    headers: {
      'content-type': 'application/json',
      'stripe-signature': stripe.webhooks.generateTestHeaderString({
        payload: raw,
        secret: STRIPE_SECRET,
        timestamp: Math.floor(clock.now().getTime() / 1000),
      }),
    },
  };
};

/** a signed event posted through the gateway and applied by the worker */
const processed = async ({ raw, headers }: { raw: string; headers: Record<string, string> }) => {
  const res = await p.http('/v1/billing/webhooks/stripe', { method: 'POST', headers, body: raw });
  expect(res.status, await res.text()).toBe(200);
  const eventId = (JSON.parse(raw) as { id: string }).id;
  await eventually(
    async () => {
      await processWebhooks(p.kernel, billingContext(p.kernel));
      return (
        await p.kernel.db.query<{ status: string }>(
          'SELECT status FROM billing.webhook_events WHERE provider = $1 AND event_id = $2',
          ['stripe', eventId],
        )
      ).rows[0]?.status;
    },
    (s) => s !== undefined && s !== 'pending',
    15_000,
    'the webhook processed',
  );
};

/** the provider reports a paid invoice of its subscription (metadata as the platform's checkout sets it), applied by the worker */
const invoicePaid = (subscription: string, metadata: Record<string, string> = {}) =>
  processed(
    stripeEvent('invoice.paid', { id: `in_${randomUUID().slice(0, 8)}`, object: 'invoice', subscription, metadata }),
  );

beforeAll(async () => {
  p = await startTestPlatform({
    services: ['billing', 'money'],
    clock,
    env: {
      STRIPE_WEBHOOK_SECRET: STRIPE_SECRET,
      BILLING_TRIAL_DAYS: '14',
      BILLING_ESCALATION_INTERVAL_SEC: '3600',
      RATE_LIMIT_ANONYMOUS_PER_MIN: '100000',
    },
  });
  paidPlanId = (await operatorPlan(p.kernel, { priceCents: 4900 })).id;
});
afterAll(async () => {
  await p?.close();
});

describe('a terminated tenant', () => {
  it("cannot subscribe again: POST /billing/subscriptions is 402 subscription-terminated and every request stays 402 until the platform owner's recovery", async () => {
    const t = await tenantWithTrial(paidPlanId);
    try {
      await escalateTo(t, 'past_due', 14 * DAY + 60_000);
      await escalateTo(t, 'suspended', 8 * DAY);
      await escalateTo(t, 'terminated', 31 * DAY);
      const blocked = await eventually(
        () => wallets(t),
        (r) => r.status === 402,
        10_000,
        'the terminated tenant blocked',
      );
      expect(blocked.body.type).toMatch(/\/subscription-terminated$/);

      const again = await http('POST', '/billing/subscriptions', t.token, { planId: paidPlanId });
      expect(again.status, JSON.stringify(again.body)).toBe(402);
      expect(again.body.type).toMatch(/\/subscription-terminated$/);
      const free = await http('POST', '/billing/subscriptions', t.token, { planId: FREE_PLAN_ID });
      expect(free.status, JSON.stringify(free.body)).toBe(402);
      expect(await statusOf(t.tenantId)).toBe('terminated');
      expect((await current(t)).id).toBe(t.subscriptionId);
      expect((await wallets(t)).status).toBe(402);
      // behind the gateway too (gRPC CreateSubscription, a gateway whose cache is behind): 422 invalid-transition
      const refusal = await p.kernel.commands
        .run(systemMeta(t.tenantId), (uow) =>
          createSubscription(uow, billingContext(p.kernel), {
            tenantId: t.tenantId,
            planId: paidPlanId,
            externalId: null,
          }),
        )
        .then(
          () => 'created',
          (error: unknown) => (isDomainError(error) ? `${error.status} ${error.suffix}` : String(error)),
        );
      expect(refusal).toBe('422 invalid-transition');

      const recovered = await http('POST', `/admin/tenants/${t.tenantId}/recover`, ownerToken());
      expect(recovered.status, JSON.stringify(recovered.body)).toBe(200);
      expect(recovered.body.status).toBe('active');
      await eventually(
        () => wallets(t),
        (r) => r.status === 200,
        10_000,
        'the recovered tenant admitted',
      );
    } finally {
      clock.reset();
    }
  });
});

describe('a canceled tenant', () => {
  it('resubscribes to a paid plan without a trial: past_due at once, active only once the provider reports a payment', async () => {
    const t = await canceledTenant();
    try {
      await eventually(
        () => wallets(t),
        (r) => r.status === 402,
        10_000,
        'the canceled tenant blocked',
      );
      const again = await http('POST', '/billing/subscriptions', t.token, { planId: paidPlanId });
      expect(again.status, JSON.stringify(again.body)).toBe(201);
      expect(again.body).toMatchObject({ planId: paidPlanId, status: 'past_due', trialEndsAt: null, version: 1 });
      expect(again.body.id).not.toBe(t.subscriptionId);

      // the provider's checkout names the tenant in its metadata: its first paid invoice links and activates it
      const externalId = `sub_${randomUUID()}`;
      await invoicePaid(externalId, { tenant_id: t.tenantId });
      const paid = await current(t);
      expect(paid).toMatchObject({ id: again.body.id, status: 'active', externalId });
    } finally {
      clock.reset();
    }
  });

  it('never gets a second trial: cancel → resubscribe → cancel → resubscribe, on a paid plan or the free one', async () => {
    const t = await canceledTenant();
    try {
      const first = await http('POST', '/billing/subscriptions', t.token, { planId: paidPlanId });
      expect(first.status, JSON.stringify(first.body)).toBe(201);
      expect(first.body).toMatchObject({ status: 'past_due', trialEndsAt: null });
      const canceled = await http('DELETE', `/billing/subscriptions/${first.body.id}`, t.token);
      expect(canceled.status, JSON.stringify(canceled.body)).toBe(200);
      await escalateTo(t, 'canceled', 32 * DAY);

      const second = await http('POST', '/billing/subscriptions', t.token, { planId: paidPlanId });
      expect(second.status, JSON.stringify(second.body)).toBe(201);
      expect(second.body).toMatchObject({ status: 'past_due', trialEndsAt: null });
      expect(
        (await http('DELETE', `/billing/subscriptions/${second.body.id}`, t.token)).status,
        'cancel the second',
      ).toBe(200);
      await escalateTo(t, 'canceled', 32 * DAY);

      // the free plan has nothing to collect: active at once, still no trial
      const free = await http('POST', '/billing/subscriptions', t.token, { planId: FREE_PLAN_ID });
      expect(free.status, JSON.stringify(free.body)).toBe(201);
      expect(free.body).toMatchObject({ status: 'active', trialEndsAt: null });
      const list = await http('GET', '/billing/subscriptions', t.token);
      const trials = (list.body.data as { trialEndsAt: string | null }[]).filter((s) => s.trialEndsAt !== null);
      expect(trials).toHaveLength(1);
      await eventually(
        () => wallets(t),
        (r) => r.status === 200,
        10_000,
        'the tenant on the free plan admitted',
      );
    } finally {
      clock.reset();
    }
  });
});

describe("a provider's subscription id (externalId)", () => {
  it('is refused from a tenant in POST and PATCH: 403 forbidden naming externalId', async () => {
    const t = await canceledTenant();
    try {
      const posted = await http('POST', '/billing/subscriptions', t.token, {
        planId: paidPlanId,
        externalId: `sub_${randomUUID()}`,
      });
      expect(posted.status, JSON.stringify(posted.body)).toBe(403);
      expect(posted.body.type).toMatch(/\/forbidden$/);
      expect(posted.body.detail).toContain('externalId');

      const live = await tenantWithTrial();
      const patched = await http('PATCH', `/billing/subscriptions/${live.subscriptionId}`, live.token, {
        planId: paidPlanId,
        version: 1,
        externalId: `sub_${randomUUID()}`,
      });
      expect(patched.status, JSON.stringify(patched.body)).toBe(403);
      expect(patched.body.detail).toContain('externalId');
      expect(await current(live)).toMatchObject({ planId: FREE_PLAN_ID, version: 1, externalId: null });
      const set = await http('PUT', `/billing/subscriptions/${live.subscriptionId}/external-id`, live.token, {
        externalId: `sub_${randomUUID()}`,
      });
      expect(set.status, JSON.stringify(set.body)).toBe(403);
    } finally {
      clock.reset();
    }
  });

  it("another tenant's cannot be claimed, and the victim's payments activate the victim only", async () => {
    const attacker = await canceledTenant();
    const victimExternal = `sub_${randomUUID()}`;
    const victim = await tenantWithTrial(paidPlanId, victimExternal);
    try {
      // the victim's trial ended unpaid
      await escalateTo(victim, 'past_due', 14 * DAY + 60_000);

      const claim = await http('POST', '/billing/subscriptions', attacker.token, {
        planId: paidPlanId,
        externalId: victimExternal,
      });
      expect(claim.status, JSON.stringify(claim.body)).toBe(403);
      // nor through the trusted path (gRPC CreateSubscription, the platform's own callers): unique across tenants
      const trusted = await p.kernel.commands
        .run(systemMeta(attacker.tenantId), (uow) =>
          createSubscription(uow, billingContext(p.kernel), {
            tenantId: attacker.tenantId,
            planId: paidPlanId,
            externalId: victimExternal,
          }),
        )
        .then(
          () => 'created',
          (error: unknown) => (isDomainError(error) ? `${error.status} ${error.suffix}` : String(error)),
        );
      expect(trusted).toBe('409 conflict');

      const resubscribed = await http('POST', '/billing/subscriptions', attacker.token, { planId: paidPlanId });
      expect(resubscribed.status, JSON.stringify(resubscribed.body)).toBe(201);
      // the provider's subscription id decides, not the tenant an event's metadata names
      await invoicePaid(victimExternal, { tenant_id: attacker.tenantId });
      expect(await statusOf(victim.tenantId)).toBe('active');
      expect(await statusOf(attacker.tenantId)).toBe('past_due');
      expect(await current(attacker)).toMatchObject({ externalId: null });
      const bound = await p.kernel.db.query<{ tenant_id: string }>(
        'SELECT tenant_id FROM rm.billing_subscriptions WHERE external_id = $1',
        [victimExternal],
      );
      expect(bound.rows.map((r) => r.tenant_id)).toEqual([victim.tenantId]);
    } finally {
      clock.reset();
    }
  });

  it("in Stripe's current shapes too (through the gateway): a basil invoice's parent.subscription_details pays the bound tenant whatever its metadata names; a subscription's price moves it to the plan listing that price", async () => {
    const priceId = `price_${randomUUID().replace(/-/g, '').slice(0, 14)}`;
    const pro = await operatorPlan(p.kernel, { priceCents: 9900, providerPriceIds: { stripe: [priceId], paddle: [] } });
    const other = await canceledTenant();
    const external = `sub_${randomUUID().replace(/-/g, '')}`;
    const bound = await tenantWithTrial(paidPlanId, external);
    await processed(
      stripeEvent('invoice.payment_succeeded', {
        id: `in_${randomUUID().slice(0, 8)}`,
        object: 'invoice',
        parent: {
          type: 'subscription_details',
          subscription_details: { subscription: external, metadata: { tenant_id: other.tenantId } },
        },
      }),
    );
    expect(await statusOf(bound.tenantId)).toBe('active');
    expect(await statusOf(other.tenantId)).toBe('canceled');
    await processed(
      stripeEvent('customer.subscription.updated', {
        id: external,
        object: 'subscription',
        metadata: {},
        items: { object: 'list', data: [{ id: 'si_1', price: { id: priceId, object: 'price' } }] },
      }),
    );
    expect(await current(bound)).toMatchObject({ planId: pro.id });
  });

  it('is bound to one tenant only when several bind it at once (a constraint, not a lookup): one wins, the others 409', async () => {
    const externalId = `sub_${randomUUID()}`;
    const tenants = await Promise.all(Array.from({ length: 6 }, () => seedTenant(p.kernel.db)));
    const outcomes = await Promise.all(
      tenants.map(({ tenantId }) =>
        p.kernel.commands
          .run(systemMeta(tenantId), (uow) =>
            createSubscription(uow, billingContext(p.kernel), { tenantId, planId: FREE_PLAN_ID, externalId }),
          )
          .then(
            () => 'created',
            (error: unknown) => (isDomainError(error) ? `${error.status} ${error.suffix}` : String(error)),
          ),
      ),
    );
    expect(outcomes.filter((o) => o === 'created')).toHaveLength(1);
    expect(outcomes.filter((o) => o === '409 conflict')).toHaveLength(tenants.length - 1);
    const winner = tenants[outcomes.indexOf('created')]!.tenantId;
    const carrying = await p.kernel.db.query<{ tenant_id: string }>(
      'SELECT tenant_id FROM rm.billing_subscriptions WHERE external_id = $1',
      [externalId],
    );
    expect(carrying.rows.map((r) => r.tenant_id)).toEqual([winner]);
  });

  it('the platform owner binds one with PUT /billing/subscriptions/:id/external-id, never one bound to another tenant (409)', async () => {
    const holder = `sub_${randomUUID()}`;
    await tenantWithTrial(paidPlanId, holder);
    const t = await tenantWithTrial(paidPlanId);
    const externalId = `sub_${randomUUID()}`;
    try {
      const taken = await http('PUT', `/billing/subscriptions/${t.subscriptionId}/external-id`, ownerToken(), {
        externalId: holder,
      });
      expect(taken.status, JSON.stringify(taken.body)).toBe(409);
      expect(taken.body.type).toMatch(/\/conflict$/);

      const set = await http('PUT', `/billing/subscriptions/${t.subscriptionId}/external-id`, ownerToken(), {
        externalId,
      });
      expect(set.status, JSON.stringify(set.body)).toBe(200);
      expect(set.body).toMatchObject({ id: t.subscriptionId, tenantId: t.tenantId, externalId, version: 2 });
      const again = await http('PUT', `/billing/subscriptions/${t.subscriptionId}/external-id`, ownerToken(), {
        externalId,
      });
      expect(again.body).toMatchObject({ externalId, version: 2 });
      expect(
        (await http('PUT', `/billing/subscriptions/${randomUUID()}/external-id`, ownerToken(), { externalId })).status,
      ).toBe(404);

      // the provider's payments for it now reach this tenant
      await escalateTo(t, 'past_due', 14 * DAY + 60_000);
      await invoicePaid(externalId);
      expect(await statusOf(t.tenantId)).toBe('active');
    } finally {
      clock.reset();
    }
  });
});
