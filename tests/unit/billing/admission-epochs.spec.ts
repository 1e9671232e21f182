import { describe, expect, it } from 'vitest';
import { BillingAdmission } from '../../../commands/billing/admission';
import { EVERY_PLAN } from '../../../commands/billing/limits';
import type { LimitAnswer, PlanLimits } from '../../../domain/billing/resources';
import { CacheEpochs } from '../../../infra/cache/epochs';
import { createMemoryCache } from '../../../infra/cache/memory';
import type { Kernel } from '../../../infra/kernel';
import { silentLogger } from '../../../infra/observability/logger';

/*
 * The gateway's cached billing answers decide the next request after a change billing committed
 * (DESIGN.md mechanism 8), without waiting for the log's invalidation: each entry is tied to
 * billing's epochs of the tenant. Here the log never delivers anything, and the TTLs are a minute.
 */
const TENANT = '018f0000-0000-7000-8000-000000000001';
const LONG_TTL = { planInfoTtlMs: 60_000, limitTtlMs: 60_000 };
const request = {
  tenantId: TENANT,
  method: 'POST',
  route: '/v1/data/:module/:model',
  namespace: 'data',
  counts: 'records',
};

/** billing's answers: `records` used of `limit`, changed by the test as billing's commands would */
const billing = () => {
  const state = { used: 2, limit: 2, fetches: 0 };
  const answers = {
    planInfo: async () => ({
      tenantId: TENANT,
      status: 'active' as const,
      planId: 'p',
      limits: { records: state.limit } as unknown as PlanLimits,
    }),
    checkLimit: async (): Promise<LimitAnswer> => {
      state.fetches += 1;
      return {
        resource: 'records',
        allowed: state.used < state.limit,
        currentUsage: state.used,
        limit: state.limit,
        remaining: state.limit - state.used,
      };
    },
  };
  return { state, answers };
};

const kernelWithoutLog = () =>
  ({
    clock: { now: () => new Date() },
    logger: silentLogger(),
    invalidations: { on: () => undefined },
  }) as unknown as Kernel;

const outcome = (admission: BillingAdmission) =>
  admission.admit(request).then(
    () => 'admitted',
    (error: { status?: number }) => `refused ${error.status}`,
  );

describe("the gateway's billing admission", () => {
  it('given a tenant at its records limit, when billing commits an upgrade and bumps its epochs, then the next request is admitted', async () => {
    const { state, answers } = billing();
    const epochs = new CacheEpochs(createMemoryCache(), 'billing-limits');
    const admission = new BillingAdmission(kernelWithoutLog(), answers, { ...LONG_TTL, epochs });
    expect(await outcome(admission)).toBe('refused 402');
    expect(await outcome(admission)).toBe('refused 402');
    expect(state.fetches).toBe(1); // served from memory while nothing changed

    state.limit = 10;
    await epochs.bump([TENANT]);
    expect(await outcome(admission)).toBe('admitted');

    state.limit = 2; // a plan changed: every tenant's epochs
    await epochs.bump([EVERY_PLAN]);
    expect(await outcome(admission)).toBe('refused 402');
  });

  it("given a counted mutation, when it is admitted, then billing's epochs are read once for both of its answers (with Redis, one round trip)", async () => {
    const { answers } = billing();
    const epochs = new CacheEpochs(createMemoryCache(), 'billing-limits');
    const current = epochs.current.bind(epochs);
    let reads = 0;
    epochs.current = (scopes) => {
      reads += 1;
      return current(scopes);
    };
    const admission = new BillingAdmission(kernelWithoutLog(), answers, { ...LONG_TTL, epochs });
    expect(await outcome(admission)).toBe('refused 402'); // plan info, then the records limit
    reads = 0;
    expect(await outcome(admission)).toBe('refused 402');
    expect(reads).toBe(1);
  });

  it('without epochs, a cached answer outlives the change until its TTL or the log (what the epochs fix)', async () => {
    const { state, answers } = billing();
    const admission = new BillingAdmission(kernelWithoutLog(), answers, LONG_TTL);
    expect(await outcome(admission)).toBe('refused 402');
    state.limit = 10;
    expect(await outcome(admission)).toBe('refused 402');
  });
});
