import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testToken } from '../../support/auth';
import type { TestDatabase } from '../../support/db';
import { createTestDatabase } from '../../support/db';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import { pollUntil } from '../../support/poll';

let database: TestDatabase;
let gateway: TestPlatform;
let workers: TestPlatform | null = null;
const headers = {
  authorization: `Bearer ${testToken('tenant-a', 'u1', ['tally.*'])}`,
  'content-type': 'application/json',
};
const published = async () =>
  Number(
    (await database.db.query(`SELECT count(*) AS n FROM log.records WHERE topic = 'platform.tally.events'`)).rows[0].n,
  );
const totals = async () =>
  (await database.db.query(`SELECT increments FROM rm.tally_totals WHERE tenant_id = 'tenant-a'`)).rows.map((r) =>
    Number(r.increments),
  );

beforeAll(async () => {
  database = await createTestDatabase('roles');
  gateway = await startTestPlatform({ role: 'gateway', database });
});
afterAll(async () => {
  await Promise.all([gateway, workers].map((p) => p?.close() ?? Promise.resolve()));
  await database.drop();
});

describe('an HTTP role without workers', () => {
  it('answers writes and read-your-writes queries, and leaves publishing and async projections undone', async () => {
    expect(
      (
        await gateway.http('/v1/tally/counters', {
          method: 'POST',
          headers,
          body: JSON.stringify({ id: 'split', name: 'split' }),
        })
      ).status,
    ).toBe(201);
    const inc = await gateway.http('/v1/tally/counters/split/increment', {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': uuidv7() },
      body: JSON.stringify({ by: 4 }),
    });
    expect(inc.status).toBe(200);
    expect(await (await gateway.http('/v1/tally/counters/split', { headers })).json()).toEqual({
      id: 'split',
      name: 'split',
      value: 4,
    });
    // deliberately let time pass: with no workers role nothing may be published (an absence cannot be polled for)
    await new Promise((r) => setTimeout(r, 500));
    expect(await published()).toBe(0);
    expect(await totals()).toEqual([]);
  });
});

describe('the workers role started beside it', () => {
  it('publishes the committed events and builds the async projections', async () => {
    workers = await startTestPlatform({ role: 'workers', database });
    await pollUntil(
      async () => ({ published: await published(), totals: await totals() }),
      (now) => now.published >= 2 && now.totals.length > 0,
      { timeoutMs: 20_000, everyMs: 100, what: 'the events published and the projection built' },
    );
    expect(await published()).toBe(2);
    expect(await totals()).toEqual([1]);
  });
});
