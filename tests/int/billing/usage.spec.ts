import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billingContext } from '../../../commands/billing/context';
import { backfillSubscriptions, startTrial, takeUsageSnapshots } from '../../../commands/billing/escalation';
import { PLATFORM_TENANT_ID } from '../../../domain/identity/constants';
import { planLimitsKey } from '../../../commands/money/plan-limits';
import { recordServiceEvent, seedTenant } from '../../support/billing';
import { currentSubscriptionOf, eventually, login, operatorPlan } from '../../support/billing-http';
import type { IdentityPlatform } from '../../support/identity';
import { addMember, registerUser, startIdentityPlatform } from '../../support/identity';

/**
 * Usage per tenant and resource from the other services' events (identity's members through its
 * API; files' uploads as the files service will publish them), the daily snapshots, tenants that
 * existed before billing, and money's plan limits kept current by billing.
 */
let p: IdentityPlatform;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are checked field by field
const call = (method: string, path: string, token: string, body?: unknown): Promise<{ status: number; body: any }> =>
  p.api(path, { method, token, ...(body === undefined ? {} : { body }), headers: { 'idempotency-key': randomUUID() } });

beforeAll(async () => {
  p = await startIdentityPlatform({ services: ['identity', 'billing', 'money'] });
});
afterAll(async () => {
  await p?.close();
});

describe('usage', () => {
  it("counts the tenant's members as identity adds and deletes them, and a file's bytes until it is permanently deleted", async () => {
    const owner = await registerUser(p);
    await currentSubscriptionOf(p, owner.accessToken);
    const usage = async () => (await call('GET', '/billing/usage', owner.accessToken)).body;
    expect((await usage()).usage.users).toBe(1);
    const member = await addMember(p, owner);
    expect((await usage()).usage.users).toBe(2);
    const deleted = await call('DELETE', `/users/${member.userId}`, owner.accessToken);
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    expect(await usage()).toMatchObject({
      tenantId: owner.tenantId,
      usage: { users: 1 },
      limits: { users: 5 },
      percentage: { users: 20 },
    });

    await recordServiceEvent(p.kernel, owner.tenantId, 'f1', 'files.file.uploaded', { fileId: 'f1', sizeBytes: 5000 });
    await recordServiceEvent(p.kernel, owner.tenantId, 'f2', 'files.file.uploaded', { fileId: 'f2', sizeBytes: 700 });
    await recordServiceEvent(p.kernel, owner.tenantId, 'f1', 'files.file.deleted', { fileId: 'f1' });
    expect((await usage()).usage.storageBytes).toBe(5700);
    await recordServiceEvent(p.kernel, owner.tenantId, 'f1', 'files.file.permanent_deleted', {
      fileId: 'f1',
      sizeBytes: 5000,
    });
    expect((await usage()).usage.storageBytes).toBe(700);
    // the read model rebuilt from the log (each event applied again into a new generation) counts the same
    const before = (
      await p.kernel.db.query(
        'SELECT resource, used::int AS used FROM rm.billing_usage WHERE tenant_id = $1 ORDER BY resource',
        [owner.tenantId],
      )
    ).rows;
    await p.kernel.projections.rebuild('billing.usage');
    expect(
      (
        await p.kernel.db.query(
          'SELECT resource, used::int AS used FROM rm.billing_usage WHERE tenant_id = $1 ORDER BY resource',
          [owner.tenantId],
        )
      ).rows,
    ).toEqual(before);
    // another tenant's usage is not found
    const stranger = await registerUser(p);
    expect((await call('GET', `/billing/usage?tenant_id=${stranger.tenantId}`, owner.accessToken)).status).toBe(404);
  });

  it('takes a daily snapshot, listed newest first and paged', async () => {
    const owner = await registerUser(p);
    await currentSubscriptionOf(p, owner.accessToken);
    const ctx = billingContext(p.kernel);
    await takeUsageSnapshots(p.kernel, ctx);
    p.clock.advance(86_400_000);
    await takeUsageSnapshots(p.kernel, ctx);
    await takeUsageSnapshots(p.kernel, ctx);
    try {
      const token = await login(p, owner.email);
      const first = await call('GET', '/billing/usage/history?page_size=1', token);
      expect(first.status, JSON.stringify(first.body)).toBe(200);
      expect(first.body.data).toEqual([
        expect.objectContaining({
          day: p.clock.now().toISOString().slice(0, 10),
          usage: expect.objectContaining({ users: 1 }),
        }),
      ]);
      const second = await call(
        'GET',
        `/billing/usage/history?page_size=1&page_token=${first.body.next_page_token}`,
        token,
      );
      expect(second.body.data[0].day < first.body.data[0].day).toBe(true);
      expect(second.body.next_page_token).toBeUndefined();
    } finally {
      p.clock.reset();
    }
  });
});

describe('tenants and subscriptions', () => {
  it('a tenant that existed before billing gets its trial from the backfill', async () => {
    const { tenantId } = await seedTenant(p.kernel.db);
    expect(
      (await p.kernel.db.query('SELECT 1 FROM rm.billing_subscriptions WHERE tenant_id = $1', [tenantId])).rowCount,
    ).toBe(0);
    await backfillSubscriptions(p.kernel, billingContext(p.kernel));
    const { rows } = await p.kernel.db.query(
      'SELECT status, plan_id FROM rm.billing_subscriptions WHERE tenant_id = $1',
      [tenantId],
    );
    expect(rows).toEqual([{ status: 'trialing', plan_id: '01900000-0000-7000-8000-000000000001' }]);
  });

  it("finds the tenants without a subscription behind whole pages of subscribed ones, oldest first (the directory's tenants page by page)", async () => {
    // given three tenants older than any other, the two oldest with a subscription
    const seeded = [];
    for (const day of ['1990-01-01', '1990-01-02', '1990-01-03']) {
      const { tenantId } = await seedTenant(p.kernel.db);
      await p.kernel.db.query('UPDATE rm.iam_tenants SET created_at = $2 WHERE tenant_id = $1', [
        tenantId,
        `${day}T00:00:00Z`,
      ]);
      seeded.push(tenantId);
    }
    const ctx = billingContext(p.kernel);
    await startTrial(p.kernel, ctx, seeded[0]!);
    await startTrial(p.kernel, ctx, seeded[1]!);
    // when billing asks for one tenant without a subscription (pages of one: two subscribed pages first)
    const [first] = await ctx.tenants.withoutSubscription(p.kernel.db, 1);
    // then it is the third, as one join of identity's tenants and billing's subscriptions finds it
    expect(first).toEqual({ tenantId: seeded[2], createdAt: new Date('1990-01-03T00:00:00Z') });
    const joined = await p.kernel.db.query<{ tenant_id: string }>(
      `SELECT t.tenant_id FROM rm.iam_tenants t WHERE t.tenant_id <> $1
         AND NOT EXISTS (SELECT 1 FROM rm.billing_subscriptions s WHERE s.tenant_id = t.tenant_id)
       ORDER BY t.created_at, t.tenant_id LIMIT 3`,
      [PLATFORM_TENANT_ID],
    );
    const three = await ctx.tenants.withoutSubscription(p.kernel.db, 3);
    expect(three.map((t) => t.tenantId)).toEqual(joined.rows.map((r) => r.tenant_id));
  });
});

describe("money's plan limits", () => {
  it("come from the tenant's plan, written by billing when the plan changes", async () => {
    const owner = await registerUser(p);
    const sub = await currentSubscriptionOf(p, owner.accessToken);
    const wallet = await call('POST', '/wallets', owner.accessToken, { userId: owner.userId, currency: 'USD' });
    const big = await call('POST', `/wallets/${wallet.body.id}/credit`, owner.accessToken, {
      amount: 20_000_000,
      currency: 'USD',
    });
    expect(big.status).toBe(402);
    expect(big.body.type).toMatch(/\/plan-limit-exceeded$/);
    const plan = await operatorPlan(p.kernel, {
      priceCents: 0,
      limits: { moneyMaxTransaction: 50_000_000, moneyMaxBalance: 500_000_000 },
    });
    expect(
      (
        await call('PATCH', `/billing/subscriptions/${sub.id}`, owner.accessToken, {
          planId: plan.id,
          version: sub.version,
        })
      ).status,
    ).toBe(200);
    const cached = await eventually(
      () => p.kernel.engines.cache.get(planLimitsKey(owner.tenantId)),
      (v) => v !== null && JSON.parse(v).maxTxAmount === '50000000',
      5_000,
      'the cache key',
    );
    expect(JSON.parse(cached!)).toMatchObject({ maxTxAmount: '50000000', maxBalance: '500000000' });
    expect(
      (
        await call('POST', `/wallets/${wallet.body.id}/credit`, owner.accessToken, {
          amount: 20_000_000,
          currency: 'USD',
        })
      ).status,
    ).toBe(200);
  });
});
