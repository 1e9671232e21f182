import { randomUUID } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testToken } from '../../support/auth';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';

let platform: TestPlatform;
const headers = {
  authorization: `Bearer ${testToken('tenant-a', 'u1', ['tally.*'])}`,
  'content-type': 'application/json',
};

beforeAll(async () => {
  platform = await startTestPlatform();
  const res = await platform.http('/v1/tally/counters', {
    method: 'POST',
    headers,
    body: JSON.stringify({ id: 'c', name: 'c' }),
  });
  expect(res.status).toBe(201);
});
afterAll(async () => platform.close());

const increment = (key: string | null, by = 1, counter = 'c') =>
  platform.http(`/v1/tally/counters/${counter}/increment`, {
    method: 'POST',
    headers: { ...headers, ...(key ? { 'idempotency-key': key } : {}) },
    body: JSON.stringify({ by }),
  });

const eventsOf = async (counter: string) =>
  Number(
    (
      await platform.database.db.query(`SELECT count(*) AS n FROM es.events WHERE stream_id = $1`, [
        `tally.counter:tenant-a:${counter}`,
      ])
    ).rows[0].n,
  );

describe('a mutation that requires an Idempotency-Key', () => {
  it('refuses a request without the key with 400', async () => {
    const res = await increment(null);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      type: expect.stringMatching(/validation-error$/),
      errors: [{ field: 'Idempotency-Key', code: 'REQUIRED' }],
    });
  });

  it.each(['not-a-uuid', '123', 'a8098c1a-f86e-11da-bd1a-00112444be1e' /* v1 */])(
    'refuses the malformed key %s with 400',
    async (key) => {
      const res = await increment(key);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ errors: [{ field: 'Idempotency-Key', code: 'INVALID_FORMAT' }] });
    },
  );

  it('accepts UUID v4 and v7 keys', async () => {
    expect((await increment(randomUUID())).status).toBe(200);
    expect((await increment(uuidv7())).status).toBe(200);
  });
});

describe('a key used once', () => {
  it('answers the same request again with the stored response, byte for byte, without executing it', async () => {
    const key = uuidv7();
    const first = await increment(key, 3);
    const firstBody = await first.text();
    const before = await eventsOf('c');
    const again = await increment(key, 3);
    expect(again.status).toBe(first.status);
    expect(await again.text()).toBe(firstBody);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await eventsOf('c')).toBe(before);
  });

  it('answers the same key with another body with 409 idempotency-conflict', async () => {
    const key = uuidv7();
    expect((await increment(key, 1)).status).toBe(200);
    const res = await increment(key, 2);
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ type: expect.stringMatching(/idempotency-conflict$/) });
  });

  it('remembers a refusal too, so a retry cannot turn it into an execution', async () => {
    const key = uuidv7();
    const first = await increment(key, 1, 'missing');
    expect(first.status).toBe(404);
    await platform.http('/v1/tally/counters', {
      method: 'POST',
      headers,
      body: JSON.stringify({ id: 'missing', name: 'now exists' }),
    });
    const again = await increment(key, 1, 'missing');
    expect(again.status).toBe(404);
    expect(await eventsOf('missing')).toBe(1);
  });

  it('keeps keys per tenant: another tenant may use the same key', async () => {
    const key = uuidv7();
    expect((await increment(key)).status).toBe(200);
    const other = {
      authorization: `Bearer ${testToken('tenant-b', 'u2', ['tally.*'])}`,
      'content-type': 'application/json',
    };
    await platform.http('/v1/tally/counters', {
      method: 'POST',
      headers: other,
      body: JSON.stringify({ id: 'c', name: 'c' }),
    });
    const res = await platform.http('/v1/tally/counters/c/increment', {
      method: 'POST',
      headers: { ...other, 'idempotency-key': key },
      body: JSON.stringify({ by: 1 }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('idempotent-replayed')).toBeNull();
  });
});

describe('50 identical requests at the same moment', () => {
  it('executes exactly once; the others get the stored response or 409', async () => {
    await platform.http('/v1/tally/counters', {
      method: 'POST',
      headers,
      body: JSON.stringify({ id: 'storm', name: 'storm' }),
    });
    const key = uuidv7();
    const responses = await Promise.all(Array.from({ length: 50 }, () => increment(key, 7, 'storm')));
    const bodies = await Promise.all(responses.map((r) => r.text()));
    const ok = responses.filter((r) => r.status === 200);
    const busy = responses.filter((r) => r.status === 409);
    expect(ok.length + busy.length).toBe(50);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(new Set(bodies.filter((_, i) => responses[i]!.status === 200)).size).toBe(1);
    for (const [i, r] of responses.entries())
      if (r.status === 409) expect(JSON.parse(bodies[i]!)).toMatchObject({ reason: 'in_progress' });
    expect(await eventsOf('storm')).toBe(2);
    expect(JSON.parse(bodies[responses.findIndex((r) => r.status === 200)]!)).toMatchObject({ value: 7 });
  });
});
