import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlatformOwner } from '../../../commands/identity/account';
import { currentSubscriptionOf, escalate, eventually, login, operatorPlan } from '../../support/billing-http';
import type { IdentityPlatform, Registered } from '../../support/identity';
import { PASSWORD, registerUser, startIdentityPlatform, uniqueEmail } from '../../support/identity';

/**
 * The whole escalation timeline by moving the clock (spec 001, States and transitions): a notice 3
 * days before the trial ends, past_due on day 0, suspended on day 8 (mutations 402 except money's
 * debit), terminated on day 38 (402 on everything), the termination phases to completed, at least
 * five notices before any deletion, and recovery by the platform owner before completion. Real
 * identity (registration, tokens, the owner's mailbox in the SMTP capture), real money.
 */
const DAY = 86_400_000;
const HOUR = 3_600_000;
let p: IdentityPlatform;
let owner: string;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Res = { status: number; body: any };
const call = (method: string, path: string, token: string, body?: unknown): Promise<Res> =>
  p.api(path, { method, token, ...(body === undefined ? {} : { body }), headers: { 'idempotency-key': randomUUID() } });

/** the billing notices the tenant owner received, in order */
const purposeOf = (m: (typeof p.smtp.messages)[number]): string => {
  const value = m.parsed.headers.get('x-platform-purpose');
  return typeof value === 'string' ? value : '';
};
const noticesTo = (email: string): string[] =>
  p.smtp.messages
    .filter((m) => m.envelope.to.includes(email) && purposeOf(m).startsWith('billing.'))
    .map((m) => purposeOf(m).slice('billing.'.length));

const waitForNotice = (email: string, kind: string, count = 1) =>
  eventually(
    async () => noticesTo(email).filter((k) => k === kind).length,
    (n) => n >= count,
    10_000,
    `${count} ${kind} notice(s) to ${email}`,
  );

interface Tenant {
  user: Registered;
  token: string;
  subscriptionId: string;
  walletId: string;
}

const tenantOnPaidPlan = async (planId: string): Promise<Tenant> => {
  const user = await registerUser(p);
  const sub = await currentSubscriptionOf(p, user.accessToken);
  expect(sub).toMatchObject({ status: 'trialing', tenantId: user.tenantId, version: 1 });
  const changed = await call('PATCH', `/billing/subscriptions/${sub.id}`, user.accessToken, { planId, version: 1 });
  expect(changed.status, JSON.stringify(changed.body)).toBe(200);
  expect(changed.body).toMatchObject({ planId, version: 2, status: 'trialing', pendingChange: null });
  const wallet = await call('POST', '/wallets', user.accessToken, { userId: user.userId, currency: 'USD' });
  expect(wallet.status, JSON.stringify(wallet.body)).toBe(201);
  expect(
    (await call('POST', `/wallets/${wallet.body.id}/credit`, user.accessToken, { amount: 10_000, currency: 'USD' }))
      .status,
  ).toBe(200);
  return { user, token: user.accessToken, subscriptionId: sub.id, walletId: wallet.body.id };
};

const statusOf = async (t: Tenant): Promise<string> => {
  t.token = await login(p, t.user.email);
  return (await call('GET', `/billing/subscriptions/${t.subscriptionId}`, t.token)).body.status;
};

/** moves the clock, runs the escalation worker, and waits until the tenant's subscription has the status */
const advanceTo = async (ms: number, ...expected: [Tenant, string][]) => {
  p.clock.advance(ms);
  await escalate(p.kernel);
  await escalate(p.kernel);
  for (const [t, status] of expected) expect(await statusOf(t)).toBe(status);
};

beforeAll(async () => {
  p = await startIdentityPlatform({
    services: ['identity', 'billing', 'money'],
    env: { BILLING_TRIAL_DAYS: '14', BILLING_ESCALATION_INTERVAL_SEC: '3600' },
  });
  owner = uniqueEmail('platform-owner');
  await createPlatformOwner(p.kernel, { email: owner, password: PASSWORD });
});
afterAll(async () => {
  await p?.close();
});

describe('an unpaid subscription on a paid plan', () => {
  it('escalates trial end → past_due → suspended → terminated → completed with notices, and the platform owner recovers a tenant before completion', async () => {
    const plan = await operatorPlan(p.kernel, { priceCents: 4900 });
    const a = await tenantOnPaidPlan(plan.id);
    const b = await tenantOnPaidPlan(plan.id);

    // 3 days before the trial ends: the notice, nothing else
    await advanceTo(11 * DAY + HOUR, [a, 'trialing'], [b, 'trialing']);
    await waitForNotice(a.user.email, 'trial_ending');

    // the trial ends without a payment: day 0 of the unpaid episode, full access
    await advanceTo(3 * DAY, [a, 'past_due'], [b, 'past_due']);
    await waitForNotice(a.user.email, 'past_due');
    expect((await call('GET', '/users', a.token)).status).toBe(200);
    expect((await call('POST', `/wallets/${a.walletId}/credit`, a.token, { amount: 1, currency: 'USD' })).status).toBe(
      200,
    );

    // reminders in the grace, then suspension on day 8: read-only, except money's debit and friends
    await advanceTo(3 * DAY, [a, 'past_due']);
    await advanceTo(3 * DAY, [a, 'past_due']);
    await waitForNotice(a.user.email, 'payment_reminder', 2);
    await advanceTo(2 * DAY, [a, 'suspended'], [b, 'suspended']);
    await waitForNotice(a.user.email, 'suspended');
    a.token = await login(p, a.user.email);
    const invite = await eventually(
      () => call('POST', '/users', a.token, { email: uniqueEmail('blocked') }),
      (r) => r.status === 402,
      5_000,
      'POST /users refused',
    );
    expect(invite.body.type).toMatch(/\/subscription-suspended$/);
    expect((await call('GET', '/users', a.token)).status).toBe(200);
    const debit = await call('POST', `/wallets/${a.walletId}/debit`, a.token, { amount: 100, currency: 'USD' });
    expect(debit.status, JSON.stringify(debit.body)).toBe(200);
    expect((await call('POST', `/wallets/${a.walletId}/credit`, a.token, { amount: 1, currency: 'USD' })).status).toBe(
      402,
    );

    // warnings before termination; on day 38 terminated: 402 on every request
    await advanceTo(23 * DAY, [a, 'suspended']);
    await advanceTo(6 * DAY, [a, 'suspended']);
    await waitForNotice(a.user.email, 'termination_warning', 2);
    await advanceTo(DAY, [a, 'terminated'], [b, 'terminated']);
    await waitForNotice(a.user.email, 'terminated');
    const before = noticesTo(a.user.email);
    expect(before.slice(0, before.indexOf('terminated')).length).toBeGreaterThanOrEqual(5);
    expect(before).toEqual([
      'trial_ending',
      'past_due',
      'payment_reminder',
      'payment_reminder',
      'suspended',
      'termination_warning',
      'termination_warning',
      'terminated',
    ]);
    a.token = await login(p, a.user.email);
    const blocked = await eventually(
      () => call('GET', '/users', a.token),
      (r) => r.status === 402,
      5_000,
      'GET /users refused',
    );
    expect(blocked.body.type).toMatch(/\/subscription-terminated$/);
    expect((await call('GET', `/admin/tenants/${a.user.tenantId}/termination-status`, a.token)).body).toMatchObject({
      tenantId: a.user.tenantId,
      status: 'terminated',
      phase: 'deleting_records',
    });

    // the first 24 hours nothing is erased: the platform owner recovers b then; a runs to completion
    await advanceTo(12 * HOUR);
    const ownerToken = await login(p, owner);
    a.token = await login(p, a.user.email);
    // a terminated tenant is refused like on every request (402), its billing mutations included
    expect((await call('POST', `/admin/tenants/${b.user.tenantId}/recover`, a.token)).status).toBe(402);
    const recovered = await call('POST', `/admin/tenants/${b.user.tenantId}/recover`, ownerToken);
    expect(recovered.status, JSON.stringify(recovered.body)).toBe(200);
    expect(recovered.body).toMatchObject({ status: 'active', phase: null });
    b.token = await login(p, b.user.email);
    await eventually(
      () => call('GET', '/users', b.token),
      (r) => r.status === 200,
      5_000,
      'access restored',
    );
    expect((await call('POST', `/wallets/${b.walletId}/credit`, b.token, { amount: 1, currency: 'USD' })).status).toBe(
      200,
    );
    // only the platform owner recovers
    expect((await call('POST', `/admin/tenants/${a.user.tenantId}/recover`, b.token)).status).toBe(403);

    // after 24 h billing asks for the records' erasure; the phase moves on only when money (the
    // one service of the phase here, which keeps its journal) has confirmed on the log
    const phaseAfterEscalation = async () => {
      await escalate(p.kernel);
      return (await call('GET', `/admin/tenants/${a.user.tenantId}/termination-status`, await login(p, owner))).body
        .phase as string;
    };
    // a service of the phase that never confirms (registered, silent) holds the phase however long it takes
    await p.kernel.db.query(
      `INSERT INTO es.erasure_participants (domain, phase, registered_at) VALUES ('silent', 'deleting_records', now())`,
    );
    await advanceTo(12 * HOUR + 60_000);
    await eventually(
      () =>
        p.kernel.db.query(`SELECT 1 FROM es.events WHERE tenant_id = $1 AND type = 'money.tenant.erased'`, [
          a.user.tenantId,
        ]),
      (r) => r.rowCount === 1,
      20_000,
      "money's confirmation",
    );
    await advanceTo(6 * HOUR);
    expect(await phaseAfterEscalation()).toBe('deleting_records');
    // the silent service leaves the platform: the confirmations are complete
    await p.kernel.db.query(`DELETE FROM es.erasure_participants WHERE domain = 'silent'`);
    await eventually(phaseAfterEscalation, (phase) => phase === 'deleting_files', 20_000, 'deleting_files');
    // completed on the files' confirmations, not before 48 h
    expect(await phaseAfterEscalation()).toBe('deleting_files');
    await advanceTo(18 * HOUR);
    await eventually(phaseAfterEscalation, (phase) => phase === 'completed', 20_000, 'completed');
    const ownerAgain = await login(p, owner);
    b.token = await login(p, b.user.email);
    const done = await call('GET', `/admin/tenants/${a.user.tenantId}/termination-status`, ownerAgain);
    expect(done.body).toMatchObject({ status: 'terminated', phase: 'completed' });
    // the money records of a are kept: its wallet and journal are still there, frozen
    const kept = await p.kernel.db.query('SELECT 1 FROM rm.money_wallets WHERE tenant_id = $1', [a.user.tenantId]);
    expect(kept.rowCount).toBe(1);
    const late = await call('POST', `/admin/tenants/${a.user.tenantId}/recover`, ownerAgain);
    expect(late.status).toBe(422);
    expect(late.body.type).toMatch(/\/invalid-transition$/);
    // another tenant's termination status is not found for a tenant member
    expect((await call('GET', `/admin/tenants/${a.user.tenantId}/termination-status`, b.token)).status).toBe(404);
  });
});
