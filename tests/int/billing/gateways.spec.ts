import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billingContext } from '../../../commands/billing/context';
import { createSubscription } from '../../../commands/billing/handlers';
import { FREE_PLAN_ID } from '../../../domain/billing/plan';
import { systemMeta } from '../../../infra/kernel';
import { testToken } from '../../support/auth';
import { BILLING_PERMISSIONS, recordServiceEvent, seedTenant } from '../../support/billing';
import { eventually, operatorPlan } from '../../support/billing-http';
import type { SplitPlatform } from '../../support/split';
import { startSplitPlatform } from '../../support/split';
import { SPLIT } from '../../support/topology';

/**
 * A plan change is seen by every gateway process on its next request (spec 001: billing.plan.changed
 * and billing.subscription.changed flush the caches of every gateway; DESIGN.md mechanism 8): two
 * gateway processes with warm caches in front of the same roles. It needs separate processes, so
 * it runs in the split project only (listed in SPLIT_SUITES; skipped, and counted, in int).
 */
let p: SplitPlatform;
let gateways: string[];

beforeAll(async () => {
  if (!SPLIT) return;
  p = await startSplitPlatform({ services: ['identity', 'billing'], auth: 'token' });
  gateways = [p.url, await p.addGateway()];
}, 180_000);
afterAll(async () => {
  await p?.stop();
});

const inviteAt = async (url: string, token: string): Promise<number> =>
  (
    await fetch(`${url}/v1/users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: `${randomUUID()}@example.test` }),
    })
  ).status;

describe('two gateway processes', () => {
  it.skipIf(!SPLIT)('both decide their next request under a plan change', async () => {
    const { tenantId } = await seedTenant(p.kernel.db);
    const s = await p.kernel.commands.run(systemMeta(tenantId), (uow) =>
      createSubscription(uow, billingContext(p.kernel), { tenantId, planId: FREE_PLAN_ID, externalId: null }),
    );
    for (let i = 0; i < 5; i += 1)
      await recordServiceEvent(p.kernel, tenantId, `m${i}`, 'auth.member.added', {
        userId: `m${i}`,
        tenantId,
        roleIds: [],
        via: 'test',
      });
    const token = testToken(tenantId, 'u-admin', [...BILLING_PERMISSIONS, 'users.create']);
    // both gateways at the free plan's limit of 5 users, their caches warm
    for (const url of gateways)
      await eventually(
        () => inviteAt(url, token),
        (status) => status === 402,
        10_000,
        `402 at ${url}`,
      );
    for (const url of gateways) expect(await inviteAt(url, token)).toBe(402);

    const bigger = await operatorPlan(p.kernel, { priceCents: 0, limits: { users: 100 } });
    const changed = await fetch(`${gateways[0]}/v1/billing/subscriptions/${s.id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ planId: bigger.id, version: 1 }),
    });
    expect(changed.status).toBe(200);
    // billing moved its epochs in the shared cache before it answered: each gateway's next request
    // is decided under the new plan, however long the log takes to bring the event
    const afterChange = await Promise.all(gateways.map((url) => inviteAt(url, token)));
    expect(afterChange).toEqual([202, 202]);
  });
});
