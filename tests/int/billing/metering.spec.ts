import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlatformOwner } from '../../../commands/identity/account';
import type { BillingGrpcClient } from '../../support/billing';
import { billingGrpcClient } from '../../support/billing';
import { currentSubscriptionOf, eventually, login, operatorPlan } from '../../support/billing-http';
import { crmManifest } from '../../support/data';
import type { IdentityPlatform, Registered } from '../../support/identity';
import { mailToken, PASSWORD, registerUser, startIdentityPlatform, uniqueEmail } from '../../support/identity';
import { freePort } from '../../support/process';

/**
 * Every limit of the plan metered and enforced (spec 001 resource types), the way a tenant meets
 * them: members and pending invitations (users), records of a module's generated models, events
 * published on the bus in a day, installed modules. For each: at the limit the request answers 402
 * plan-limit-exceeded, GET /billing/usage and gRPC CheckLimit and RetrieveUsage tell the same count
 * and limit, an upgrade lifts it, and another tenant is unaffected. Concurrent creations never
 * overshoot. Feature flags and custom domains have no owner (docs/decisions.md): counted 0,
 * answered the same everywhere.
 */
let p: IdentityPlatform;
let c: BillingGrpcClient;
let platformOwner: string;

/** a plan tighter than the free plan in the resources under test: choosing it is a downgrade, enforced at once (spec 001 rule 2) */
const TIGHT = { users: 2, records: 2, eventsPerDay: 3, modules: 1 };

interface Tenant extends Registered {
  subscriptionId: string;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
const call = (method: string, path: string, token: string, body?: unknown): Promise<{ status: number; body: any }> =>
  p.api(path, { method, token, ...(body === undefined ? {} : { body }), headers: { 'idempotency-key': randomUUID() } });

const expectLimitProblem = (res: { status: number; body: { type?: string; resource?: string } }, resource: string) => {
  expect(res.status, JSON.stringify(res.body)).toBe(402);
  expect(res.body.type).toMatch(/\/plan-limit-exceeded$/);
  expect(res.body.resource).toBe(resource);
};

/** a new tenant (its owner is its first user) on the tight plan */
const tightTenant = async (): Promise<Tenant> => {
  const owner = await registerUser(p);
  const sub = await currentSubscriptionOf(p, owner.accessToken);
  const plan = await operatorPlan(p.kernel, { priceCents: 0, limits: TIGHT });
  const changed = await call('PATCH', `/billing/subscriptions/${sub.id}`, owner.accessToken, {
    planId: plan.id,
    version: sub.version,
  });
  expect(changed.status, JSON.stringify(changed.body)).toBe(200);
  return { ...owner, subscriptionId: sub.id };
};

/** the upgrade: the pending downgrade canceled, then a plan above the free one in every limit */
const upgrade = async (t: Tenant): Promise<void> => {
  const canceled = await call('POST', `/billing/subscriptions/${t.subscriptionId}/cancel-downgrade`, t.accessToken, {
    reason: 'more room',
  });
  expect(canceled.status, JSON.stringify(canceled.body)).toBe(200);
  const plan = await operatorPlan(p.kernel, { priceCents: 0 });
  const changed = await call('PATCH', `/billing/subscriptions/${t.subscriptionId}`, t.accessToken, {
    planId: plan.id,
    version: canceled.body.version,
  });
  expect(changed.status, JSON.stringify(changed.body)).toBe(200);
};

const GRPC_RESOURCE = {
  users: 'RESOURCE_TYPE_USERS',
  records: 'RESOURCE_TYPE_RECORDS',
  eventsPerDay: 'RESOURCE_TYPE_EVENTS_PER_DAY',
  modules: 'RESOURCE_TYPE_MODULES',
  featureFlags: 'RESOURCE_TYPE_FEATURE_FLAGS',
  customDomains: 'RESOURCE_TYPE_CUSTOM_DOMAINS',
} as const;
const REPORT_FIELD = {
  users: 'users',
  records: 'records',
  eventsPerDay: 'events',
  modules: 'modules',
  featureFlags: 'feature_flags',
  customDomains: 'custom_domains',
} as const;

/** GET /billing/usage, gRPC CheckLimit and gRPC RetrieveUsage agree on the count and the limit */
const expectAgreement = async (t: Tenant, key: keyof typeof GRPC_RESOURCE, used: number, limit: number) => {
  await eventually(
    async () => {
      const rest = await call('GET', '/billing/usage', t.accessToken);
      const check = await c.call('CheckLimit', { tenant_id: t.tenantId, resource: GRPC_RESOURCE[key] });
      const { report } = (await c.call('RetrieveUsage', { tenant_id: t.tenantId })) as {
        report: Record<string, { used: string; limit: string }>;
      };
      return { rest: rest.body, check, report };
    },
    ({ rest, check, report }) =>
      rest.usage?.[key] === used &&
      rest.limits?.[key] === limit &&
      check.current_usage === String(used) &&
      check.limit === String(limit) &&
      check.allowed === (limit === 0 || used < limit) &&
      report[REPORT_FIELD[key]]?.used === String(used) &&
      report[REPORT_FIELD[key]]?.limit === String(limit),
    15_000,
    `${key}: ${used} of ${limit} in usage, CheckLimit and RetrieveUsage`,
  );
};

const invite = (t: Tenant, email = uniqueEmail('invitee')) =>
  call('POST', '/users', t.accessToken, { email }).then((res) => ({ ...res, email }));

beforeAll(async () => {
  const grpcPort = await freePort();
  p = await startIdentityPlatform({
    services: ['identity', 'billing', 'data', 'events'],
    env: { GRPC_PORT: String(grpcPort) },
  });
  c = billingGrpcClient(`127.0.0.1:${grpcPort}`);
  const email = uniqueEmail('platform-owner');
  await createPlatformOwner(p.kernel, { email, password: PASSWORD });
  platformOwner = await login(p, email);
  const registered = await call('POST', '/modules', platformOwner, await crmManifest());
  expect(registered.status, JSON.stringify(registered.body)).toBe(201);
}, 120_000);
afterAll(async () => {
  c?.close();
  await p?.close();
});

describe('users: members plus pending invitations', () => {
  it('given one member of 2, when a second person is invited, then a third invitation is 402 and accepting stays within the limit', async () => {
    const t = await tightTenant();
    const other = await tightTenant();
    await expectAgreement(t, 'users', 1, 2);
    const before = p.smtp.messages.length;
    const first = await invite(t);
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    // the pending invitation holds a seat: counted at once everywhere
    await expectAgreement(t, 'users', 2, 2);
    expectLimitProblem(await invite(t), 'users');
    // a re-sent invitation to the pending address takes no new seat
    expect((await invite(t, first.email)).status).toBe(202);
    const token = await mailToken(p, first.email, 'invite', before);
    const accepted = await p.api('/auth/accept-invite', { body: { token, name: 'Ada Lovelace', password: PASSWORD } });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(201);
    await expectAgreement(t, 'users', 2, 2);
    expectLimitProblem(await invite(t), 'users');
    // another tenant's seats are its own
    expect((await invite(other)).status).toBe(202);
    await upgrade(t);
    await expectAgreement(t, 'users', 2, 50);
    expect((await invite(t)).status).toBe(202);
  });

  it('given invitations sent before a downgrade, when they are accepted at once, then the members never pass the limit', async () => {
    const owner = await registerUser(p);
    const sub = await currentSubscriptionOf(p, owner.accessToken);
    const t: Tenant = { ...owner, subscriptionId: sub.id };
    const before = p.smtp.messages.length;
    const invited = [];
    for (let i = 0; i < 3; i += 1) invited.push(await invite(t));
    for (const i of invited) expect(i.status).toBe(202);
    const tokens = await Promise.all(invited.map((i) => mailToken(p, i.email, 'invite', before)));
    // the downgrade to 2 users while 3 invitations are pending: the owner plus one of them may join
    const plan = await operatorPlan(p.kernel, { priceCents: 0, limits: TIGHT });
    expect(
      (
        await call('PATCH', `/billing/subscriptions/${sub.id}`, owner.accessToken, {
          planId: plan.id,
          version: sub.version,
        })
      ).status,
    ).toBe(200);
    const answers = await Promise.all(
      tokens.map((token) =>
        p.api('/auth/accept-invite', { body: { token, name: 'Grace Hopper', password: PASSWORD } }),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 402, 402]);
    const members = await p.kernel.db.query(
      "SELECT 1 FROM rm.iam_members WHERE tenant_id = $1 AND status <> 'pending_deletion'",
      [owner.tenantId],
    );
    expect(members.rowCount).toBe(2);
  });

  it('given one free seat, when two invitations race, then exactly one is sent', async () => {
    const t = await tightTenant();
    const answers = await Promise.all([invite(t), invite(t), invite(t)]);
    expect(answers.map((a) => a.status).sort()).toEqual([202, 402, 402]);
    await expectAgreement(t, 'users', 2, 2);
  });
});

describe('modules: installations booked to the installing tenant', () => {
  it('given one module allowed, when a second is installed, then 402; the count is the tenant’s, not the platform’s', async () => {
    const t = await tightTenant();
    const other = await tightTenant();
    const installed = await call('POST', '/modules/crm/installations', platformOwner, { tenantId: t.tenantId });
    expect(installed.status, JSON.stringify(installed.body)).toBe(201);
    await expectAgreement(t, 'modules', 1, 1);
    await expectAgreement(other, 'modules', 0, 1);
    const second = {
      ...(await crmManifest()),
      slug: `crm${randomUUID().slice(0, 6).replace(/-/g, '')}`,
      name: 'CRM two',
    };
    const registered = await call('POST', '/modules', platformOwner, second);
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    expectLimitProblem(
      await call('POST', `/modules/${second.slug}/installations`, platformOwner, { tenantId: t.tenantId }),
      'modules',
    );
    // installing the same module again changes nothing and is no new installation
    expect((await call('POST', '/modules/crm/activate', platformOwner, { tenantId: t.tenantId })).status).toBe(200);
    await upgrade(t);
    await expectAgreement(t, 'modules', 1, 50);
    expect(
      (await call('POST', `/modules/${second.slug}/installations`, platformOwner, { tenantId: t.tenantId })).status,
    ).toBe(201);
    await expectAgreement(t, 'modules', 2, 50);
  });
});

describe('records: every generated create and delete of every module', () => {
  it('given 2 records allowed, when a third is created, then 402 at the gateway; a deletion frees a place; an upgrade lifts it', async () => {
    const t = await tightTenant();
    const other = await tightTenant();
    for (const tenant of [t, other])
      expect(
        (await call('POST', '/modules/crm/installations', platformOwner, { tenantId: tenant.tenantId })).status,
      ).toBe(201);
    const token = await login(p, t.email);
    const contact = await call('POST', '/data/crm/contacts', token, { name: 'Ada' });
    expect(contact.status, JSON.stringify(contact.body)).toBe(201);
    const note = await call('POST', '/data/crm/notes', token, { contact_id: contact.body.id, body: 'met' });
    expect(note.status, JSON.stringify(note.body)).toBe(201);
    await expectAgreement(t, 'records', 2, 2);
    expectLimitProblem(await call('POST', '/data/crm/contacts', token, { name: 'Grace' }), 'records');
    // another tenant creates its own
    const otherToken = await login(p, other.email);
    expect((await call('POST', '/data/crm/contacts', otherToken, { name: 'Alan' })).status).toBe(201);
    await expectAgreement(other, 'records', 1, 2);
    expect((await call('DELETE', `/data/crm/notes/${note.body.id}`, token)).status).toBe(204);
    await expectAgreement(t, 'records', 1, 2);
    // two creations racing for the last place: one of them
    const race = await Promise.all([
      call('POST', '/data/crm/contacts', token, { name: 'Grace' }),
      call('POST', '/data/crm/contacts', token, { name: 'Hedy' }),
    ]);
    expect(race.map((r) => r.status).sort()).toEqual([201, 402]);
    await expectAgreement(t, 'records', 2, 2);
    await upgrade(t);
    await expectAgreement(t, 'records', 2, 1_000_000);
    expect((await call('POST', '/data/crm/contacts', token, { name: 'Hedy' })).status).toBe(201);
  });
});

describe('events_per_day: events the tenant publishes on the bus', () => {
  const publish = (token: string, n = 1) =>
    n === 1
      ? call('POST', '/events/publish', token, { topic: 'platform.app.events', type: 'app.order.placed', payload: {} })
      : call('POST', '/events/publish/batch', token, {
          topic: 'platform.app.events',
          events: Array.from({ length: n }, () => ({ type: 'app.order.placed', payload: {} })),
        });

  it('given 3 a day, when a batch would pass it, then 402 and nothing is published; the next day counts from 0', async () => {
    const t = await tightTenant();
    const other = await tightTenant();
    expect((await publish(t.accessToken, 2)).status).toBe(202);
    await expectAgreement(t, 'eventsPerDay', 2, 3);
    expectLimitProblem(await publish(t.accessToken, 2), 'events_per_day');
    await expectAgreement(t, 'eventsPerDay', 2, 3);
    expect((await publish(t.accessToken)).status).toBe(202);
    await expectAgreement(t, 'eventsPerDay', 3, 3);
    expectLimitProblem(await publish(t.accessToken), 'events_per_day');
    expect((await publish(other.accessToken)).status).toBe(202);
    await expectAgreement(other, 'eventsPerDay', 1, 3);
    // the next day (UTC) counts from 0 again: no cache keeps yesterday's count
    const today = t.accessToken;
    p.clock.advance(86_400_000);
    try {
      const tomorrow = { ...t, accessToken: await login(p, t.email) };
      await expectAgreement(tomorrow, 'eventsPerDay', 0, 3);
      expect((await publish(tomorrow.accessToken)).status).toBe(202);
      await expectAgreement(tomorrow, 'eventsPerDay', 1, 3);
    } finally {
      p.clock.reset();
    }
    t.accessToken = today;
    await upgrade(t);
    await expectAgreement(t, 'eventsPerDay', 3, 1_000_000);
    expect((await publish(t.accessToken)).status).toBe(202);
  });

  it('given 3 a day, when ten publishes race, then exactly three are accepted; a batch larger than the limit counts nothing', async () => {
    const t = await tightTenant();
    // a first batch of the day larger than the whole limit
    expectLimitProblem(await publish(t.accessToken, 4), 'events_per_day');
    await expectAgreement(t, 'eventsPerDay', 0, 3);
    // ten single publishes at once for three places
    const race = await Promise.all(Array.from({ length: 10 }, () => publish(t.accessToken)));
    expect(race.filter((r) => r.status === 202)).toHaveLength(3);
    for (const refused of race.filter((r) => r.status !== 202)) expectLimitProblem(refused, 'events_per_day');
    await expectAgreement(t, 'eventsPerDay', 3, 3);
  });
});

describe('feature_flags and custom_domains: no owner yet', () => {
  it('are counted 0 with the plan’s limit, the same in usage, CheckLimit and RetrieveUsage', async () => {
    const t = await tightTenant();
    // the pending downgrade holds the stricter of the two plans: the free plan's 10 and 1
    await expectAgreement(t, 'featureFlags', 0, 10);
    await expectAgreement(t, 'customDomains', 0, 1);
  });
});
