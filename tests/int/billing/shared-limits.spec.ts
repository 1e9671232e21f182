import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billingContext } from '../../../commands/billing/context';
import { createSubscription } from '../../../commands/billing/handlers';
import { LimitBook } from '../../../commands/billing/limits';
import { FREE_PLAN_ID } from '../../../domain/billing/plan';
import { CacheEpochs } from '../../../infra/cache/epochs';
import { systemMeta } from '../../../infra/kernel';
import type { Queryable } from '../../../infra/postgres/db';
import { recordServiceEvent, seedTenant } from '../../support/billing';
import { eventually } from '../../support/billing-http';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

/**
 * CheckLimit's memory shared through Redis when it is configured (commands/billing/limits.ts
 * SharedLimits): a second billing process whose memory misses answers from the entry the first
 * one stored, without reading the read models; a change (here a member added by identity, seen
 * through the log) makes that entry stale for every process.
 */
let p: TestPlatform;

/** read models no process may reach: a book built on it answers from memory or Redis, or fails */
const unreachable = { query: () => Promise.reject(new Error('the read models were read')) } as unknown as Queryable;

const anotherProcessBook = (db: Queryable) => {
  const cache = p.kernel.engines.cache;
  return new LimitBook(db, p.kernel.people, p.kernel.clock, 2_000, {
    cache,
    epochs: new CacheEpochs(cache, 'billing-limits'),
    ttlMs: 60_000,
  });
};

beforeAll(async () => {
  const redisUrl = process.env.TEST_REDIS_URL;
  if (!redisUrl)
    throw new Error('TEST_REDIS_URL is not set: run bash scripts/test-infra.sh and source .test-infra/env');
  p = await startTestPlatform({
    services: ['billing'],
    env: { REDIS_URL: redisUrl, REDIS_KEY_PREFIX: `test-billing-${randomUUID()}:` },
  });
});
afterAll(async () => {
  await p?.close();
});

describe('CheckLimit with Redis configured', () => {
  it('answers a second process from the shared entry, and a change makes it stale everywhere', async () => {
    expect(p.kernel.engines.cache.kind).toBe('redis');
    const { tenantId } = await seedTenant(p.kernel.db);
    const ctx = billingContext(p.kernel);
    await p.kernel.commands.run(systemMeta(tenantId), (uow) =>
      createSubscription(uow, ctx, { tenantId, planId: FREE_PLAN_ID, externalId: null }),
    );
    // another process, cold, with no way to the read models: Redis answers (once the log's own invalidations of the start have settled)
    const fromRedis = await eventually(
      async () => {
        ctx.book.drop(tenantId);
        await ctx.book.checkLimit(tenantId, 'users');
        return anotherProcessBook(unreachable)
          .checkLimit(tenantId, 'users')
          .catch(() => null);
      },
      (a) => a !== null,
      10_000,
      'an answer from the shared entry',
    );
    expect(fromRedis).toMatchObject({ allowed: true, currentUsage: 0, limit: 5 });

    // identity adds a member (the usage projection counts it in that transaction); the change reaches billing (what the log's handler runs)
    await recordServiceEvent(p.kernel, tenantId, 'u-1', 'auth.member.added', {
      userId: 'u-1',
      tenantId,
      roleIds: [],
      via: 'test',
    });
    await ctx.book.changed(tenantId);
    // the shared entry is stale for every process: never the old count, the read models are asked
    await expect(anotherProcessBook(unreachable).checkLimit(tenantId, 'users')).rejects.toThrow(
      'the read models were read',
    );
    expect(await anotherProcessBook(p.kernel.db).checkLimit(tenantId, 'users')).toMatchObject({
      currentUsage: 1,
      remaining: 4,
    });
    // which stored the new count for the others (again after the log's own delivery of the change, which bumps once more)
    const refreshed = await eventually(
      async () => {
        await anotherProcessBook(p.kernel.db).checkLimit(tenantId, 'users');
        return anotherProcessBook(unreachable)
          .checkLimit(tenantId, 'users')
          .catch(() => null);
      },
      (a) => a !== null,
      10_000,
      'the refreshed shared entry',
    );
    expect(refreshed).toMatchObject({ currentUsage: 1, remaining: 4 });
  });
});
