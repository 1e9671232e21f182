import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billingContext } from '../../../commands/billing/context';
import { createSubscription } from '../../../commands/billing/handlers';
import { LimitBook } from '../../../commands/billing/limits';
import { usageOf } from '../../../commands/billing/lookups';
import { FREE_PLAN_ID } from '../../../domain/billing/plan';
import { systemMeta } from '../../../infra/kernel';
import { recordServiceEvent, seedTenant } from '../../support/billing';
import { eventually } from '../../support/billing-http';
import { fixedTestClock } from '../../support/clock';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import type { Queryable } from '../../../infra/postgres/db';

/**
 * CheckLimit's memory (commands/billing/limits.ts LimitBook) as another billing process holds it:
 * a book of its own on the platform's read models, which no invalidation of the log reaches, with a
 * clock the test moves. A busy tenant's entry is reloaded behind the answers from half its age on
 * (a call never waits for the read models while the entry is young enough), and no entry is ever
 * served past its maximum age.
 */
const MAX_AGE_MS = 10_000;
let p: TestPlatform;

beforeAll(async () => {
  p = await startTestPlatform({ services: ['billing'] });
});
afterAll(async () => {
  await p?.close();
});

/** a tenant on the free plan with `members` members, counted by billing's usage read model */
const tenantWithMembers = async (members: number): Promise<string> => {
  const { tenantId } = await seedTenant(p.kernel.db);
  await p.kernel.commands.run(systemMeta(tenantId), (uow) =>
    createSubscription(uow, billingContext(p.kernel), { tenantId, planId: FREE_PLAN_ID, externalId: null }),
  );
  for (let i = 0; i < members; i += 1) await addMember(tenantId, `m${i}`);
  return tenantId;
};

/** identity adds a member (its usage event, committed elsewhere: this book hears nothing of it) */
const addMember = async (tenantId: string, userId: string): Promise<void> => {
  await recordServiceEvent(p.kernel, tenantId, userId, 'auth.member.added', {
    userId,
    tenantId,
    roleIds: [],
    via: 'test',
  });
  await eventually(
    () => usageOf(p.kernel.db, p.kernel.people, tenantId, new Date()),
    (usage) => usage.users >= Number(userId.slice(1)) + 1,
    10_000,
    `member ${userId} counted`,
  );
};

const usersOf = async (book: LimitBook, tenantId: string): Promise<number> =>
  (await book.checkLimit(tenantId, 'users')).currentUsage;

describe("CheckLimit's memory in another process", () => {
  it('given an entry past its refresh age, when a call finds it, then it answers from memory at once and a reload brings the change for the next calls', async () => {
    const tenantId = await tenantWithMembers(1);
    const clock = fixedTestClock(new Date());
    const book = new LimitBook(p.kernel.db, p.kernel.people, clock, MAX_AGE_MS);
    expect(await usersOf(book, tenantId)).toBe(1);

    await addMember(tenantId, 'm1');
    clock.advance(MAX_AGE_MS * 0.1); // young: served from memory, nothing reloaded
    expect(await usersOf(book, tenantId)).toBe(1);

    clock.advance(MAX_AGE_MS * 0.7); // past its refresh age (at most 3/4 of the maximum), still within it
    expect(await usersOf(book, tenantId)).toBe(1); // the entry in memory, not a wait for the read models
    // the reload that call started replaces it: the next calls, at the same time, see the second member
    await eventually(
      () => usersOf(book, tenantId),
      (users) => users === 2,
      10_000,
      'the reloaded entry',
    );
  });

  it('given an entry at its maximum age, when a call finds it, then the call waits for a fresh load', async () => {
    const tenantId = await tenantWithMembers(1);
    const clock = fixedTestClock(new Date());
    const book = new LimitBook(p.kernel.db, p.kernel.people, clock, MAX_AGE_MS);
    expect(await usersOf(book, tenantId)).toBe(1);
    await addMember(tenantId, 'm1');
    clock.advance(MAX_AGE_MS);
    expect(await usersOf(book, tenantId)).toBe(2);
  });

  it('given a reload under way, when the tenant changes in this process, then the reload is not kept: the next call loads again', async () => {
    const tenantId = await tenantWithMembers(1);
    const clock = fixedTestClock(new Date());
    const book = new LimitBook(p.kernel.db, p.kernel.people, clock, MAX_AGE_MS);
    expect(await usersOf(book, tenantId)).toBe(1);
    clock.advance(MAX_AGE_MS * 0.8);
    expect(await usersOf(book, tenantId)).toBe(1); // starts a reload behind the answer
    book.drop(tenantId); // a change committed here, while that reload reads the old state
    await addMember(tenantId, 'm1');
    expect(await usersOf(book, tenantId)).toBe(2);
  });
});

describe("CheckLimit's memory, one tenant's change", () => {
  it('given a load under way for one tenant, when another tenant changes, then the load is kept: the next call reads nothing', async () => {
    const [a, b] = [await tenantWithMembers(1), await tenantWithMembers(1)];
    const clock = fixedTestClock(new Date());
    let queries = 0;
    const counting = {
      query: (...args: Parameters<Queryable['query']>) => {
        queries += 1;
        return (p.kernel.db.query as (...x: unknown[]) => ReturnType<Queryable['query']>)(...args);
      },
    } as Queryable;
    const book = new LimitBook(counting, p.kernel.people, clock, MAX_AGE_MS);
    const loading = usersOf(book, a);
    book.drop(b); // every publish of a busy tenant drops its entry: it must not cost the others theirs
    expect(await loading).toBe(1);
    const after = queries;
    expect(await usersOf(book, a)).toBe(1);
    expect(queries).toBe(after);
  });
});
