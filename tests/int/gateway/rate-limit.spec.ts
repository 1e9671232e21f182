import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addCredentialScheme } from '../../../infra/http/credentials';
import { setGatewayPorts } from '../../../infra/http/gateway-ports';
import { testToken } from '../../support/auth';
import { requireEnv } from '../../support/env';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import type { TcpProxy } from '../../support/tcp-proxy';
import { startTcpProxy } from '../../support/tcp-proxy';
import { captureLogger } from '../../support/log-capture';
import { pollUntil } from '../../support/poll';

const redisUrl = requireEnv('TEST_REDIS_URL');
const auth = (tenant: string, user: string, permissions = ['tally.*']) => ({
  authorization: `Bearer ${testToken(tenant, user, permissions)}`,
});

/** sends n requests, `concurrency` at a time, alternating between the platforms; returns the statuses */
const flood = async (
  platforms: TestPlatform[],
  n: number,
  headers: Record<string, string>,
  concurrency = 40,
): Promise<number[]> => {
  const statuses: number[] = [];
  for (let sent = 0; sent < n; sent += concurrency) {
    const batch = Array.from({ length: Math.min(concurrency, n - sent) }, (_, i) =>
      platforms[(sent + i) % platforms.length]!.http('/v1/tally/counters', { headers }).then(async (res) => {
        await res.arrayBuffer();
        return res.status;
      }),
    );
    statuses.push(...(await Promise.all(batch)));
  }
  return statuses;
};
const count = (statuses: number[], status: number) => statuses.filter((s) => s === status).length;

describe('two gateway instances sharing Redis', () => {
  let one: TestPlatform;
  let two: TestPlatform;
  beforeAll(async () => {
    one = await startTestPlatform({ env: { REDIS_URL: redisUrl } });
    two = await startTestPlatform({ env: { REDIS_URL: redisUrl } });
  });
  afterAll(async () => {
    await one?.close();
    await two?.close();
  });

  it('let exactly 1,000 of 1,200 requests of one user within a minute pass', async () => {
    const headers = auth(`t-${randomUUID()}`, `u-${randomUUID()}`);
    const statuses = await flood([one, two], 1200, headers);
    expect(count(statuses, 200)).toBe(1000);
    expect(count(statuses, 429)).toBe(200);
  });

  it('stay exact with 100 requests in flight and an uneven split (2:1)', async () => {
    const headers = auth(`t-${randomUUID()}`, `u-${randomUUID()}`);
    const statuses = await flood([one, one, two], 1200, headers, 100);
    expect(count(statuses, 200)).toBe(1000);
    expect(count(statuses, 429)).toBe(200);
  });

  it('answer 429 rate-limit-exceeded with Retry-After, retryAfter and the X-RateLimit headers', async () => {
    const headers = auth(`t-${randomUUID()}`, `u-${randomUUID()}`);
    await flood([one, two], 1000, headers);
    const res = await one.http('/v1/tally/counters', { headers });
    expect(res.status).toBe(429);
    const problem = (await res.json()) as { type: string; retryAfter: number };
    expect(problem.type.split('/').pop()).toBe('rate-limit-exceeded');
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(res.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(problem.retryAfter).toBe(Number(res.headers.get('retry-after')));
    expect(res.headers.get('x-ratelimit-limit')).toBe('1000');
    expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
    const reset = Number(res.headers.get('x-ratelimit-reset'));
    expect(reset).toBeGreaterThan(Date.now() / 1000);
    expect(reset).toBeLessThanOrEqual(Date.now() / 1000 + 61);
  });

  it('put the X-RateLimit headers on every answer, counting down', async () => {
    const headers = auth(`t-${randomUUID()}`, `u-${randomUUID()}`);
    const first = await two.http('/v1/tally/counters', { headers });
    const second = await one.http('/v1/nothing', { headers });
    expect(first.headers.get('x-ratelimit-remaining')).toBe('999');
    expect(second.status).toBe(404);
    expect(second.headers.get('x-ratelimit-limit')).toBe('1000'); // no route, but a valid token: counted against the user
    const problem = await one.http('/v1/tally/counters', {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(problem.status).toBe(400);
    expect(problem.headers.get('x-ratelimit-remaining')).toBe('997'); // the 404 counted too
  });

  it('give an admin 5,000 a minute', async () => {
    const res = await one.http('/v1/tally/counters', {
      headers: auth(`t-${randomUUID()}`, `u-${randomUUID()}`, ['platform.*']),
    });
    expect(res.headers.get('x-ratelimit-limit')).toBe('5000');
  });

  it('limit an anonymous caller per client address, a refused token included', async () => {
    const res = await one.http('/v1/tally/counters', { headers: { authorization: 'Bearer nope' } });
    expect(res.status).toBe(401);
    expect(res.headers.get('x-ratelimit-limit')).toBe('300');
  });

  it('cap a tenant as a whole at the ceiling its plan sets', async () => {
    const tenant = `t-${randomUUID()}`;
    setGatewayPorts(one.kernel, { tenantRateCeiling: async (t) => (t === tenant ? 5 : null) });
    try {
      const a = await flood([one], 3, auth(tenant, 'user-a'), 1);
      const b = await flood([one], 3, auth(tenant, 'user-b'), 1);
      expect([...a, ...b]).toEqual([200, 200, 200, 200, 200, 429]);
    } finally {
      setGatewayPorts(one.kernel, { tenantRateCeiling: async () => null });
    }
  });
});

describe('an authenticated caller refused by the route', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ env: { RATE_LIMIT_ANONYMOUS_PER_MIN: '5' } });
  });
  afterAll(async () => {
    await platform?.close();
  });

  it("counts 403s and 404s against the user's key, never draining the client address's bucket", async () => {
    const headers = auth(`t-${randomUUID()}`, `u-${randomUUID()}`, ['billing.read']);
    for (let i = 0; i < 10; i += 1) {
      const refused = await platform.http('/v1/tally/counters', { headers });
      expect(refused.status).toBe(403);
      expect(refused.headers.get('x-ratelimit-limit')).toBe('1000');
    }
    const missing = await platform.http('/v1/no-such-route', { headers });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('x-ratelimit-limit')).toBe('1000');
    // the address's own budget (anonymous calls, logins) is untouched
    const anonymous = await platform.http('/v1/tally/counters');
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('x-ratelimit-limit')).toBe('5');
    expect(anonymous.headers.get('x-ratelimit-remaining')).toBe('4');
  });
});

describe('a caller the server fails to authenticate (its credential store does not answer)', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ env: { RATE_LIMIT_ANONYMOUS_PER_MIN: '5' } });
    // a service's credential scheme whose store fails, as a key check does when the database pool times out
    addCredentialScheme(platform.kernel, {
      accepts: (token) => token.startsWith('unreachable_'),
      authenticate: () => Promise.reject(new Error('the key store did not answer')),
    });
  });
  afterAll(async () => {
    await platform?.close();
  });

  it("answers 5xx every time and never drains the client address's bucket (no 429 for the server's failure)", async () => {
    const before = await platform.http('/v1/tally/counters');
    expect(before.status).toBe(401);
    const remaining = Number(before.headers.get('x-ratelimit-remaining'));
    const statuses: number[] = [];
    for (let i = 0; i < 10; i += 1) {
      const failed = await platform.http('/v1/tally/counters', {
        headers: { authorization: 'Bearer unreachable_key' },
      });
      await failed.arrayBuffer();
      statuses.push(failed.status);
    }
    expect(statuses.filter((s) => s < 500)).toEqual([]);
    const after = await platform.http('/v1/tally/counters');
    expect(after.status).toBe(401);
    expect(Number(after.headers.get('x-ratelimit-remaining'))).toBe(remaining - 1);
  });
});

describe('a gateway whose Redis is unreachable', () => {
  let proxy: TcpProxy;
  let platform: TestPlatform;
  const capture = captureLogger();
  beforeAll(async () => {
    const target = new URL(redisUrl);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
    const viaProxy = new URL(redisUrl);
    viaProxy.port = String(proxy.port);
    platform = await startTestPlatform({
      env: { REDIS_URL: viaProxy.toString(), RATE_LIMIT_USER_PER_MIN: '20' },
      logger: capture.logger,
    });
  });
  afterAll(async () => {
    await proxy?.restore();
    await platform?.close();
    await proxy?.close();
  });

  it('keeps serving, limited by the local layer alone, and says so in the log', async () => {
    await proxy.cut();
    const headers = auth(`t-${randomUUID()}`, `u-${randomUUID()}`);
    const started = Date.now();
    const statuses = await flood([platform], 25, headers, 5);
    expect(count(statuses, 200)).toBe(20);
    expect(count(statuses, 429)).toBe(5);
    expect(Date.now() - started).toBeLessThan(5_000);
    const refused = await platform.http('/v1/tally/counters', { headers });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(capture.lines.some((l) => l.level === 40 && l.msg.includes('rate-limit store unreachable'))).toBe(true);
    const health = await platform.http('/health', { headers: auth('t', 'admin', ['platform.*']) });
    expect(health.status).toBe(503);
    expect(
      ((await health.json()) as { components: Record<string, { status: string }> }).components.valkey?.status,
    ).toBe('unhealthy');
  });

  it('goes back to the shared counters when Redis returns', async () => {
    await proxy.restore();
    const headers = auth(`t-${randomUUID()}`, `u-${randomUUID()}`);
    // each request gives the limiter a chance to find Redis again
    await pollUntil(
      async () => {
        await platform.http('/v1/tally/counters', { headers: auth(`t-${randomUUID()}`, `u-${randomUUID()}`) });
        return capture.lines.some((l) => l.msg.includes('reachable again'));
      },
      Boolean,
      { timeoutMs: 10_000, everyMs: 200, what: 'the limiter finding Redis reachable again' },
    );
    expect(capture.lines.some((l) => l.msg.includes('reachable again'))).toBe(true);
    expect((await platform.http('/v1/tally/counters', { headers })).status).toBe(200);
  });
});
