import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billingContext } from '../../../commands/billing/context';
import { escalationStep } from '../../../commands/billing/escalation';
import { FREE_PLAN_ID } from '../../../domain/billing/plan';
import { billingGrpcPort } from '../../../write-api/billing/serving';
import type { BillingGrpcClient } from '../../support/billing';
import { billingGrpcClient, LIMITS, recordServiceEvent, seedTenant } from '../../support/billing';
import { offsetClock } from '../../support/clock';
import { requireEnv } from '../../support/env';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

/**
 * Each RPC of platform.billing.v1 through a client generated independently from the .proto files
 * (tests/support/billing.ts), with its listed error statuses. Runs in one process (the gRPC port is
 * the process's; the split run covers the gateway's calls to write-api's gRPC).
 */
const STRIPE_SECRET = 'whsec_grpc_test_secret';
const clock = offsetClock();
let p: TestPlatform;
let c: BillingGrpcClient;
const stripe = new Stripe('sk_test_unused');
const DAY = 86_400_000;

const newPlan = async (overrides: Record<string, unknown> = {}) =>
  (
    await c.call('CreatePlan', {
      name: `plan-${randomUUID()}`,
      description: 'a plan',
      price_cents: 1000,
      currency: 'USD',
      limits: LIMITS(),
      features: ['sso'],
      ...overrides,
    })
  ).plan as Record<string, unknown>;

const planRequest = async () => ({
  name: `plan-${randomUUID()}`,
  description: 'a plan',
  price_cents: 1000,
  currency: 'USD',
  limits: LIMITS(),
});

const newTenant = async () => (await seedTenant(p.database.db)).tenantId;

const subscribe = async (planId = FREE_PLAN_ID, externalId = '') => {
  const tenantId = await newTenant();
  const s = (await c.call('CreateSubscription', { tenant_id: tenantId, plan_id: planId, external_id: externalId }))
    .subscription as Record<string, unknown>;
  return { tenantId, s };
};

beforeAll(async () => {
  p = await startTestPlatform({
    services: ['billing'],
    clock,
    env: {
      STRIPE_WEBHOOK_SECRET: STRIPE_SECRET,
      PADDLE_WEBHOOK_SECRET: 'paddle-secret',
      BILLING_ESCALATION_INTERVAL_SEC: '3600',
      BILLING_TRIAL_DAYS: '14',
    },
  });
  c = billingGrpcClient(`127.0.0.1:${billingGrpcPort(p.kernel)}`);
});
afterAll(async () => {
  c?.close();
  await p?.close();
});

describe('plans', () => {
  it('CreatePlan answers the plan; a second plan of the same name is ALREADY_EXISTS', async () => {
    const plan = await newPlan({ name: 'Team plan', price_cents: '4900' });
    expect(plan).toMatchObject({
      name: 'Team plan',
      price_cents: '4900',
      currency: 'USD',
      is_active: true,
      features: ['sso'],
    });
    expect((plan.limits as Record<string, string>).users).toBe('10');
    expect(plan.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(
      (
        await c.fail('CreatePlan', {
          name: 'team PLAN',
          description: 'd',
          price_cents: 1,
          currency: 'USD',
          limits: LIMITS(),
        })
      ).code,
    ).toBe(grpc.status.ALREADY_EXISTS);
  });

  it('CreatePlan refuses a missing required field or a bad currency with INVALID_ARGUMENT', async () => {
    const base = { name: `p-${randomUUID()}`, description: 'd', price_cents: 1, currency: 'USD', limits: LIMITS() };
    for (const request of [
      { ...base, name: '' },
      { ...base, currency: 'ZZZ' },
      { ...base, currency: 'usd' },
      { ...base, limits: undefined },
    ]) {
      expect((await c.fail('CreatePlan', request)).code).toBe(grpc.status.INVALID_ARGUMENT);
    }
  });

  it('RetrievePlan answers a plan, NOT_FOUND for an unknown id; the free plan is seeded', async () => {
    expect(((await c.call('RetrievePlan', { id: FREE_PLAN_ID })).plan as Record<string, unknown>).name).toBe('free');
    expect((await c.fail('RetrievePlan', { id: randomUUID() })).code).toBe(grpc.status.NOT_FOUND);
  });

  it('ListPlans pages with page_size and page_token, active plans unless include_inactive', async () => {
    const inactive = await newPlan();
    await c.call('UpdatePlan', { id: inactive.id, is_active: false });
    const seen: string[] = [];
    let token = '';
    do {
      const page = await c.call('ListPlans', { page_size: 2, page_token: token });
      expect((page.data as unknown[]).length).toBeLessThanOrEqual(2);
      seen.push(...(page.data as { id: string }[]).map((x) => x.id));
      token = page.next_page_token as string;
    } while (token);
    expect(seen).toContain(FREE_PLAN_ID);
    expect(seen).not.toContain(inactive.id);
    expect(new Set(seen).size).toBe(seen.length);
    const all = await c.call('ListPlans', { page_size: 100, include_inactive: true });
    expect((all.data as { id: string }[]).map((x) => x.id)).toContain(inactive.id);
    expect((await c.fail('ListPlans', { page_token: 'not-a-token' })).code).toBe(grpc.status.INVALID_ARGUMENT);
  });

  it('UpdatePlan replaces limits and features when given and leaves the rest; NOT_FOUND; FAILED_PRECONDITION to deactivate a plan with subscribers', async () => {
    const plan = await newPlan();
    const updated = (await c.call('UpdatePlan', { id: plan.id, price_cents: 2000, limits: LIMITS({ users: 3 }) }))
      .plan as Record<string, unknown>;
    expect(updated).toMatchObject({ price_cents: '2000', name: plan.name, features: ['sso'] });
    expect((updated.limits as Record<string, string>).users).toBe('3');
    const cleared = (await c.call('UpdatePlan', { id: plan.id, features: [], replace_features: true })).plan as Record<
      string,
      unknown
    >;
    expect(cleared.features).toEqual([]);
    expect((await c.fail('UpdatePlan', { id: randomUUID(), price_cents: 1 })).code).toBe(grpc.status.NOT_FOUND);
    await subscribe(String(plan.id));
    expect((await c.fail('UpdatePlan', { id: plan.id, is_active: false })).code).toBe(grpc.status.FAILED_PRECONDITION);
  });
});

describe('provider price ids (the plan a Stripe or Paddle price stands for)', () => {
  it('CreatePlan stores them, UpdatePlan replaces them only when present; a price id of another plan is ALREADY_EXISTS', async () => {
    const stripePrice = `price_${randomUUID().slice(0, 8)}`;
    const plan = await newPlan({ provider_price_ids: { stripe: [stripePrice, stripePrice], paddle: [] } });
    expect(plan.provider_price_ids).toEqual({ stripe: [stripePrice], paddle: [] });
    const renamed = (await c.call('UpdatePlan', { id: plan.id, name: `renamed-${randomUUID()}` })).plan as Record<
      string,
      unknown
    >;
    expect(renamed.provider_price_ids).toEqual({ stripe: [stripePrice], paddle: [] });
    const paddlePrice = `pri_${randomUUID().slice(0, 8)}`;
    const replaced = (await c.call('UpdatePlan', { id: plan.id, provider_price_ids: { paddle: [paddlePrice] } }))
      .plan as Record<string, unknown>;
    expect(replaced.provider_price_ids).toEqual({ stripe: [], paddle: [paddlePrice] });
    expect(
      (await c.fail('CreatePlan', { ...(await planRequest()), provider_price_ids: { paddle: [paddlePrice] } })).code,
    ).toBe(grpc.status.ALREADY_EXISTS);
    const other = await newPlan();
    expect((await c.fail('UpdatePlan', { id: other.id, provider_price_ids: { paddle: [paddlePrice] } })).code).toBe(
      grpc.status.ALREADY_EXISTS,
    );
    // a price id freed by its plan can be taken by another
    await c.call('UpdatePlan', { id: plan.id, provider_price_ids: {} });
    const taken = (await c.call('UpdatePlan', { id: other.id, provider_price_ids: { paddle: [paddlePrice] } }))
      .plan as Record<string, unknown>;
    expect(taken.provider_price_ids).toEqual({ stripe: [], paddle: [paddlePrice] });
    expect((await c.fail('UpdatePlan', { id: other.id, provider_price_ids: { stripe: ['has space'] } })).code).toBe(
      grpc.status.INVALID_ARGUMENT,
    );
  });
});

/**
 * A client that is not ours: Python grpcio, stubs generated by grpcio-tools from proto/ (installed
 * by scripts/test-infra.sh into a venv, TEST_GRPC_PYTHON). A proto3 client leaves zero values off
 * the wire: price_cents 0 and description "" arrive as absent and must mean "free" and "".
 */
describe('a generic proto3 client (Python grpcio)', () => {
  const script = fileURLToPath(new URL('../../support/grpc_generic_client.py', import.meta.url));
  const protoDir = fileURLToPath(new URL('../../../proto', import.meta.url));
  interface PyResult {
    code: string;
    details: string;
    response: Record<string, unknown> | null;
    sent: string;
  }
  const py = (calls: { method: string; request: Record<string, unknown> }[]) =>
    new Promise<PyResult[]>((resolve, reject) => {
      const child = execFile(
        requireEnv('TEST_GRPC_PYTHON'),
        [script, protoDir, `127.0.0.1:${billingGrpcPort(p.kernel)}`],
        { timeout: 120_000 },
        (error, stdout, stderr) =>
          error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout)),
      );
      child.stdin!.end(JSON.stringify(calls));
    });

  it('CreatePlan of a free plan (price_cents 0, no description, empty limits) and UpdatePlan telling a field left out from an explicit zero', async () => {
    const name = `free-${randomUUID()}`;
    const [created, missingLimits] = await py([
      { method: 'CreatePlan', request: { name, currency: 'EUR', price_cents: 0, description: '', limits: {} } },
      { method: 'CreatePlan', request: { name: `${name}-x`, currency: 'EUR', price_cents: 0 } },
    ]);
    expect(created!.code, created!.details).toBe('OK');
    // on the wire: name (1), currency (4) and an empty limits message (5) — no price_cents (3), no description (2)
    const hex = (t: string) => Buffer.from(t).toString('hex');
    expect(created!.sent).toBe(`0a${name.length.toString(16)}${hex(name)}2203${hex('EUR')}2a00`);
    const plan = created!.response!.plan as Record<string, unknown>;
    // proto3 JSON leaves zero values out of the answer too
    expect(plan).toMatchObject({ name, currency: 'EUR', is_active: true });
    expect(plan.price_cents ?? '0').toBe('0');
    expect(plan.description ?? '').toBe('');
    const stored = (await c.call('RetrievePlan', { id: plan.id })).plan as Record<string, unknown>;
    expect(stored).toMatchObject({ price_cents: '0', description: '', currency: 'EUR' });
    expect((stored.limits as Record<string, string>).users).toBe('0');
    // limits is a message: its presence is what "required" can mean to a proto3 client
    expect(missingLimits!.code).toBe('INVALID_ARGUMENT');

    const paid = (await newPlan({ price_cents: 2500, description: 'paid' })) as { id: string; name: string };
    const [renamed, toFree, cleared, unknown] = await py([
      { method: 'UpdatePlan', request: { id: paid.id, name: `${paid.name}-renamed` } },
      { method: 'UpdatePlan', request: { id: paid.id, price_cents: 0 } },
      { method: 'UpdatePlan', request: { id: paid.id, description: '', is_active: false } },
      { method: 'UpdatePlan', request: { id: randomUUID(), price_cents: 0 } },
    ]);
    // left out: unchanged
    expect(renamed!.code, renamed!.details).toBe('OK');
    expect(renamed!.response!.plan).toMatchObject({ name: `${paid.name}-renamed`, price_cents: '2500' });
    // proto3 optional: an explicit 0 travels and is a change (to free); an explicit "" and false too
    expect(toFree!.code, toFree!.details).toBe('OK');
    expect((await c.call('RetrievePlan', { id: paid.id })).plan).toMatchObject({
      price_cents: '0',
      name: `${paid.name}-renamed`,
      description: '',
      is_active: false,
    });
    expect(cleared!.code, cleared!.details).toBe('OK');
    expect(unknown!.code).toBe('NOT_FOUND');
  });
});

describe('subscriptions', () => {
  it('CreateSubscription starts a trial; ALREADY_EXISTS for a tenant with one; NOT_FOUND for an unknown tenant or plan', async () => {
    const { tenantId, s } = await subscribe(FREE_PLAN_ID, 'sub_ext_1');
    expect(s).toMatchObject({
      tenant_id: tenantId,
      plan_id: FREE_PLAN_ID,
      status: 'SUBSCRIPTION_STATUS_TRIALING',
      version: 1,
      external_id: 'sub_ext_1',
    });
    expect(Date.parse(String(s.trial_end)) - Date.parse(String(s.created_at))).toBe(14 * DAY);
    expect((await c.fail('CreateSubscription', { tenant_id: tenantId, plan_id: FREE_PLAN_ID })).code).toBe(
      grpc.status.ALREADY_EXISTS,
    );
    expect((await c.fail('CreateSubscription', { tenant_id: randomUUID(), plan_id: FREE_PLAN_ID })).code).toBe(
      grpc.status.NOT_FOUND,
    );
    expect((await c.fail('CreateSubscription', { tenant_id: await newTenant(), plan_id: randomUUID() })).code).toBe(
      grpc.status.NOT_FOUND,
    );
  });

  it('RetrieveSubscription answers it, NOT_FOUND for an unknown id', async () => {
    const { s } = await subscribe();
    expect(((await c.call('RetrieveSubscription', { id: s.id })).subscription as Record<string, unknown>).id).toBe(
      s.id,
    );
    expect((await c.fail('RetrieveSubscription', { id: randomUUID() })).code).toBe(grpc.status.NOT_FOUND);
  });

  it('ListSubscriptions filters by tenant and status and pages', async () => {
    const { tenantId, s } = await subscribe();
    const mine = await c.call('ListSubscriptions', { tenant_id: tenantId });
    expect((mine.data as { id: string }[]).map((x) => x.id)).toEqual([s.id]);
    const active = await c.call('ListSubscriptions', { tenant_id: tenantId, status: 'SUBSCRIPTION_STATUS_ACTIVE' });
    expect(active.data).toEqual([]);
    const first = await c.call('ListSubscriptions', { page_size: 1 });
    expect((first.data as unknown[]).length).toBe(1);
    const second = await c.call('ListSubscriptions', { page_size: 1, page_token: first.next_page_token });
    expect((second.data as { id: string }[])[0]!.id > (first.data as { id: string }[])[0]!.id).toBe(true);
  });

  it('UpdateSubscription upgrades at once with the version incremented; ABORTED for a stale version; NOT_FOUND for an unknown subscription or plan', async () => {
    const bigger = await newPlan({ limits: LIMITS({ users: 1000 }) });
    const { s } = await subscribe();
    const up = (await c.call('UpdateSubscription', { id: s.id, plan_id: bigger.id, version: 1 }))
      .subscription as Record<string, unknown>;
    expect(up).toMatchObject({ plan_id: bigger.id, version: 2, pending_plan_id: '' });
    expect((await c.fail('UpdateSubscription', { id: s.id, plan_id: FREE_PLAN_ID, version: 1 })).code).toBe(
      grpc.status.ABORTED,
    );
    expect((await c.fail('UpdateSubscription', { id: randomUUID(), plan_id: bigger.id, version: 1 })).code).toBe(
      grpc.status.NOT_FOUND,
    );
    expect((await c.fail('UpdateSubscription', { id: s.id, plan_id: randomUUID(), version: 2 })).code).toBe(
      grpc.status.NOT_FOUND,
    );
    expect((await c.fail('UpdateSubscription', { id: s.id, plan_id: bigger.id })).code).toBe(
      grpc.status.INVALID_ARGUMENT,
    );
  });

  it('a downgrade waits for the period end (pending_plan_id, downgrade_at); CancelDowngrade clears it, FAILED_PRECONDITION with none pending', async () => {
    const bigger = await newPlan({ limits: LIMITS({ users: 1000 }) });
    const smaller = await newPlan({ limits: LIMITS({ users: 2 }) });
    const { s } = await subscribe(String(bigger.id));
    const down = (await c.call('UpdateSubscription', { id: s.id, plan_id: smaller.id, version: 1 }))
      .subscription as Record<string, unknown>;
    expect(down).toMatchObject({
      plan_id: bigger.id,
      pending_plan_id: smaller.id,
      downgrade_at: s.current_period_end,
      version: 2,
    });
    expect((await c.fail('UpdateSubscription', { id: s.id, plan_id: FREE_PLAN_ID, version: 2 })).code).toBe(
      grpc.status.FAILED_PRECONDITION,
    );
    const cleared = (await c.call('CancelDowngrade', { id: s.id })).subscription as Record<string, unknown>;
    expect(cleared).toMatchObject({ pending_plan_id: '', downgrade_at: '', version: 3 });
    expect((await c.fail('CancelDowngrade', { id: s.id })).code).toBe(grpc.status.FAILED_PRECONDITION);
    expect((await c.fail('CancelDowngrade', { id: randomUUID() })).code).toBe(grpc.status.NOT_FOUND);
  });

  it('CancelSubscription schedules the end (empty answer); FAILED_PRECONDITION when canceled already; NOT_FOUND', async () => {
    const { s } = await subscribe();
    expect(await c.call('CancelSubscription', { id: s.id })).toEqual({});
    const after = (await c.call('RetrieveSubscription', { id: s.id })).subscription as Record<string, unknown>;
    expect(after.status).toBe('SUBSCRIPTION_STATUS_TRIALING');
    expect(after.canceled_at).not.toBe('');
    expect((await c.fail('CancelSubscription', { id: s.id })).code).toBe(grpc.status.FAILED_PRECONDITION);
    expect((await c.fail('CancelSubscription', { id: randomUUID() })).code).toBe(grpc.status.NOT_FOUND);
  });

  it('UpdateSubscription of a terminated subscription, and CreateSubscription for its tenant, are FAILED_PRECONDITION', async () => {
    const paid = await newPlan({ price_cents: 5000 });
    const { tenantId, s } = await subscribe(String(paid.id));
    const ctx = billingContext(p.kernel);
    try {
      // trial end → past_due (day 0) → suspended (day 8) → terminated (day 38), with the notices between
      for (const days of [15, 8, 31, 7, 1]) {
        clock.advance(days * DAY);
        await escalationStep(p.kernel, ctx);
        await escalationStep(p.kernel, ctx);
      }
      const terminated = (await c.call('RetrieveSubscription', { id: s.id })).subscription as Record<string, unknown>;
      expect(terminated.status).toBe('SUBSCRIPTION_STATUS_TERMINATED');
      const failure = await c.fail('UpdateSubscription', {
        id: s.id,
        plan_id: FREE_PLAN_ID,
        version: terminated.version,
      });
      expect(failure.code).toBe(grpc.status.FAILED_PRECONDITION);
      expect(failure.problemType).toBe('invalid-transition');
      // a terminated tenant returns only through the platform owner's recovery, never with a new subscription
      const again = await c.fail('CreateSubscription', { tenant_id: tenantId, plan_id: FREE_PLAN_ID });
      expect(again.code).toBe(grpc.status.FAILED_PRECONDITION);
      expect(again.problemType).toBe('invalid-transition');
    } finally {
      clock.reset();
    }
  });

  it("CreateSubscription naming another tenant's external_id is ALREADY_EXISTS (unique across tenants)", async () => {
    const externalId = `sub_${randomUUID()}`;
    await subscribe(FREE_PLAN_ID, externalId);
    const tenantId = await newTenant();
    const failure = await c.fail('CreateSubscription', {
      tenant_id: tenantId,
      plan_id: FREE_PLAN_ID,
      external_id: externalId,
    });
    expect(failure.code).toBe(grpc.status.ALREADY_EXISTS);
    expect(failure.problemType).toBe('conflict');
    expect((await c.call('ListSubscriptions', { tenant_id: tenantId })).data).toEqual([]);
  });
});

describe('usage and limits', () => {
  it('RetrieveUsage reports each resource with its limit and percentage; NOT_FOUND for an unknown tenant', async () => {
    const { tenantId } = await subscribe();
    const { report } = (await c.call('RetrieveUsage', { tenant_id: tenantId })) as {
      report: Record<string, Record<string, unknown>>;
    };
    expect(report.tenant_id).toBe(tenantId);
    expect(report.users).toEqual({ used: '0', limit: '5', percentage: 0 });
    for (const k of ['records', 'storage', 'events', 'modules', 'feature_flags', 'custom_domains'])
      expect(report[k]).toHaveProperty('limit');
    expect((await c.fail('RetrieveUsage', { tenant_id: randomUUID() })).code).toBe(grpc.status.NOT_FOUND);
  });

  it('CheckLimit answers allowed below the limit, not at it, always with limit 0; INVALID_ARGUMENT without a resource', async () => {
    const plan = await newPlan({ limits: LIMITS({ users: 2, records: 0 }) });
    const { tenantId } = await subscribe(String(plan.id));
    const users = await c.call('CheckLimit', { tenant_id: tenantId, resource: 'RESOURCE_TYPE_USERS' });
    expect(users).toEqual({
      resource: 'RESOURCE_TYPE_USERS',
      allowed: true,
      current_usage: '0',
      limit: '2',
      remaining: '2',
    });
    for (const userId of ['u1', 'u2'])
      await recordServiceEvent(p.kernel, tenantId, userId, 'auth.member.added', {
        userId,
        tenantId,
        roleIds: [],
        via: 'test',
      });
    billingContext(p.kernel).book.drop(tenantId);
    const full = await c.call('CheckLimit', { tenant_id: tenantId, resource: 'RESOURCE_TYPE_USERS' });
    expect(full).toMatchObject({ allowed: false, current_usage: '2', limit: '2', remaining: '0' });
    expect(await c.call('CheckLimit', { tenant_id: tenantId, resource: 'RESOURCE_TYPE_RECORDS' })).toMatchObject({
      allowed: true,
      limit: '0',
      remaining: '-1',
    });
    expect((await c.fail('CheckLimit', { tenant_id: tenantId, resource: 'RESOURCE_TYPE_UNSPECIFIED' })).code).toBe(
      grpc.status.INVALID_ARGUMENT,
    );
  });
});

describe('HandleWebhook', () => {
  const body = (id: string, type = 'invoice.payment_failed', subscription = 'sub_unknown') =>
    Buffer.from(JSON.stringify({ id, type, data: { object: { id: 'in_1', subscription } } }));
  const signed = (raw: Buffer) => ({
    'stripe-signature': stripe.webhooks.generateTestHeaderString({
      payload: raw.toString(),
      secret: STRIPE_SECRET,
      timestamp: Math.floor(clock.now().getTime() / 1000),
    }),
  });

  it('verifies and stores an event once: processed true, then false for the replay', async () => {
    const raw = body(`evt_${randomUUID()}`);
    const first = await c.call('HandleWebhook', { provider: 'stripe', raw_body: raw, headers: signed(raw) });
    expect(first).toMatchObject({ processed: true, event_type: 'invoice.payment_failed' });
    expect((await c.call('HandleWebhook', { provider: 'stripe', raw_body: raw, headers: signed(raw) })).processed).toBe(
      false,
    );
  });

  it('PERMISSION_DENIED for a bad signature, INVALID_ARGUMENT without the header or with a malformed body, NOT_FOUND for an unknown provider', async () => {
    const raw = body(`evt_${randomUUID()}`);
    const tampered = Buffer.from(raw.toString().replace('payment_failed', 'payment_succeeded'));
    expect((await c.fail('HandleWebhook', { provider: 'stripe', raw_body: tampered, headers: signed(raw) })).code).toBe(
      grpc.status.PERMISSION_DENIED,
    );
    expect((await c.fail('HandleWebhook', { provider: 'stripe', raw_body: raw, headers: {} })).code).toBe(
      grpc.status.INVALID_ARGUMENT,
    );
    const junk = Buffer.from('{not json');
    expect((await c.fail('HandleWebhook', { provider: 'stripe', raw_body: junk, headers: signed(junk) })).code).toBe(
      grpc.status.INVALID_ARGUMENT,
    );
    expect((await c.fail('HandleWebhook', { provider: 'braintree', raw_body: raw, headers: signed(raw) })).code).toBe(
      grpc.status.NOT_FOUND,
    );
  });
});
