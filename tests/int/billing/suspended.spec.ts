import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billingContext } from '../../../commands/billing/context';
import { applyProviderCommands } from '../../../commands/billing/handlers';
import { systemMeta } from '../../../infra/kernel';
import { totpCode } from '../../../infra/security/totp';
import { currentSubscriptionOf, escalate, eventually } from '../../support/billing-http';
import type { IdentityPlatform, Member, Registered } from '../../support/identity';
import { addMember, PASSWORD, registerUser, startIdentityPlatform, uniqueEmail } from '../../support/identity';

/*
 * A suspended tenant is read-only for its data (spec 001: mutations 402 subscription-suspended,
 * except money's debit, transfer, hold, confirm and cancel) — and only for its data: its members
 * still end their sessions, secure their accounts and move to their other tenants, and its audit
 * writes are accepted (spec 002: POST /audit answers 202 always). Real identity, billing, money and
 * audit; the unpaid episode is recorded nine days back, so one pass of the escalation worker
 * suspends the tenant without moving the clock past the tokens' 15 minutes.
 */
const DAY = 86_400_000;
let p: IdentityPlatform;
/** the suspended tenant's owner */
let owner: Registered;
/** a member of the suspended tenant who also belongs to the active tenant of `other` */
let member: Member;
let other: Registered;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
type Res = { status: number; body: any };
const call = (method: string, path: string, token: string, body?: unknown): Promise<Res> =>
  p.api(path, { method, token, body, headers: { 'idempotency-key': randomUUID() } });

/** a failed payment nine days ago, then the escalation worker: the tenant is suspended (day 8 on) */
const suspend = async (user: Registered): Promise<void> => {
  const subscription = await currentSubscriptionOf(p, user.accessToken);
  const failedAt = new Date(p.clock.now().getTime() - 9 * DAY).toISOString();
  await p.kernel.commands.run(systemMeta(user.tenantId), (uow) =>
    applyProviderCommands(uow, billingContext(p.kernel), user.tenantId, [
      { type: 'RecordPaymentFailure', now: failedAt },
    ]),
  );
  await escalate(p.kernel);
  await eventually(
    () => call('GET', `/billing/subscriptions/${subscription.id}`, user.accessToken),
    (r) => r.body.status === 'suspended',
    10_000,
    'the subscription suspended',
  );
  // the gateways' plan caches follow billing.subscription.changed through the log
  await eventually(
    () => call('POST', '/users', user.accessToken, { email: uniqueEmail('blocked') }),
    (r) => r.status === 402,
    10_000,
    'POST /users refused',
  );
};

beforeAll(async () => {
  p = await startIdentityPlatform({
    services: ['identity', 'billing', 'money', 'audit'],
    env: { BILLING_ESCALATION_INTERVAL_SEC: '3600' },
  });
  owner = await registerUser(p);
  other = await registerUser(p);
  // before the suspension: adding a member is a mutation of the tenant's data
  member = await addMember(p, owner);
  await addMember(p, other, { email: member.email });
  await suspend(owner);
});
afterAll(async () => {
  await p?.close();
});

describe('a suspended tenant', () => {
  it('refuses the mutations of its data with 402 subscription-suspended: a member, a role, a wallet', async () => {
    for (const [path, body] of [
      ['/users', { email: uniqueEmail('refused') }],
      ['/rbac/roles', { name: `role-${randomUUID()}`, permissions: [] }],
      ['/wallets', { userId: owner.userId, currency: 'USD' }],
    ] as const) {
      const refused = await call('POST', path, owner.accessToken, body);
      expect([path, refused.status]).toEqual([path, 402]);
      expect(refused.body.type).toMatch(/\/subscription-suspended$/);
    }
    expect((await call('GET', '/users', owner.accessToken)).status).toBe(200);
  });

  it('accepts its audit records: POST /audit answers 202 (spec 002: always), /audit/batch too', async () => {
    const record = { action: 'invoice.payment.captured', entityType: 'invoice', entityId: `inv-${randomUUID()}` };
    const one = await call('POST', '/audit', owner.accessToken, record);
    expect(one.status, JSON.stringify(one.body)).toBe(202);
    expect(one.body).toMatchObject({ status: 'queued', auditId: expect.any(String) });
    const batch = await call('POST', '/audit/batch', owner.accessToken, { records: [record, record] });
    expect(batch.status, JSON.stringify(batch.body)).toBe(202);
  });

  it('lets a member log out, after which the refresh token is refused', async () => {
    const login = await p.api('/auth/login', { body: { email: owner.email, password: PASSWORD } });
    expect(login.status).toBe(200);
    const out = await call('POST', '/auth/logout', login.body.accessToken, { refreshToken: login.body.refreshToken });
    expect(out.status, JSON.stringify(out.body)).toBe(204);
    expect((await p.api('/auth/refresh', { body: { refreshToken: login.body.refreshToken } })).status).toBe(401);
  });

  it('lets a member turn MFA on and off and ask for a verification mail', async () => {
    const enable = await call('POST', '/auth/mfa/enable', member.accessToken);
    expect(enable.status, JSON.stringify(enable.body)).toBe(200);
    const second = () => Math.floor(p.clock.now().getTime() / 1000);
    const verify = await call('POST', '/auth/mfa/verify', member.accessToken, {
      code: totpCode(enable.body.secret, second()),
    });
    expect(verify.status, JSON.stringify(verify.body)).toBe(200);
    p.clock.advance(30_000); // a code of the next window: each code is accepted once
    const disable = await call('POST', '/auth/mfa/disable', member.accessToken, {
      code: totpCode(enable.body.secret, second()),
      password: PASSWORD,
    });
    expect(disable.status, JSON.stringify(disable.body)).toBe(200);
    expect((await call('POST', '/auth/request-verify-email', owner.accessToken)).status).toBe(202);
  });

  it('lets a member switch to another tenant, whose data mutations pass', async () => {
    const switched = await call('POST', '/auth/switch-tenant', member.accessToken, { tenantId: other.tenantId });
    expect(switched.status, JSON.stringify(switched.body)).toBe(200);
    const me = await call('GET', '/auth/me', switched.body.accessToken);
    expect(me.body.tenantId).toBe(other.tenantId);
    expect(
      (await call('POST', '/rbac/roles', other.accessToken, { name: `r-${randomUUID()}`, permissions: [] })).status,
    ).toBe(201);
  });
});
