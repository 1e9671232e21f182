import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billingContext } from '../../../commands/billing/context';
import { createSubscription } from '../../../commands/billing/handlers';
import { FREE_PLAN } from '../../../domain/billing/plan';
import { systemMeta } from '../../../infra/kernel';
import { billingGrpcPort } from '../../../write-api/billing/serving';
import { testToken } from '../../support/auth';
import { recordServiceEvent, seedTenant } from '../../support/billing';
import { moneyClient } from '../../support/money';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

/** BILLING_ENABLED=false (self-hosted, spec 001: billing not deployed): every gateway check passes, money keeps the rulings' defaults */
let p: TestPlatform;

beforeAll(async () => {
  p = await startTestPlatform({ services: ['identity', 'billing', 'money'], env: { BILLING_ENABLED: 'false' } });
});
afterAll(async () => {
  await p?.close();
});

describe('billing switched off', () => {
  it('serves no gRPC, starts no trials, and lets a tenant past every limit and status', async () => {
    expect(billingGrpcPort(p.kernel)).toBeNull();
    const { tenantId } = await seedTenant(p.kernel.db);
    // even a subscription someone made, canceled and over its limits, changes nothing at the edge
    const s = await p.kernel.commands.run(systemMeta(tenantId), (uow) =>
      createSubscription(uow, billingContext(p.kernel), { tenantId, planId: FREE_PLAN.id, externalId: null }),
    );
    for (let i = 0; i < 6; i += 1)
      await recordServiceEvent(p.kernel, tenantId, `m${i}`, 'auth.member.added', {
        userId: `m${i}`,
        tenantId,
        roleIds: [],
        via: 'test',
      });
    const token = testToken(tenantId, 'u-admin', ['billing.view', 'billing.plan.change', 'users.create']);
    const cancel = await p.http(`/v1/billing/subscriptions/${s.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(cancel.status).toBe(200);
    const invite = await p.http('/v1/users', {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: `${randomUUID()}@example.test` }),
    });
    expect(invite.status).not.toBe(402);
    const money = moneyClient(p.url, tenantId, 'u-admin', { members: p.kernel.db });
    const wallet = await money.openWallet('u-admin');
    expect((await money.post(`/wallets/${wallet}/credit`, { amount: 10_000_000, currency: 'USD' })).status).toBe(200);
    expect((await money.post(`/wallets/${wallet}/credit`, { amount: 10_000_001, currency: 'USD' })).status).toBe(402);
  });
});
