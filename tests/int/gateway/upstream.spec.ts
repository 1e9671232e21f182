import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { setGatewayPorts } from '../../../infra/http/gateway-ports';
import { fixedClock } from '../../../infra/runtime/clock';
import { testToken } from '../../support/auth';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import type { FakeUpstream } from './fake-upstream';
import { startFakeUpstream } from './fake-upstream';
import type { TcpProxy } from '../../support/tcp-proxy';
import { startTcpProxy } from '../../support/tcp-proxy';
import { setTimeout as sleep } from 'node:timers/promises';

let upstream: FakeUpstream;
/** write-api is reached through it: cut, it refuses connections as a role that is down */
let writeApi: TcpProxy;
let gateway: TestPlatform;
const clock = fixedClock(new Date());
const bearer = (tenant: string, user = 'user-1') => ({
  authorization: `Bearer ${testToken(tenant, user, ['tally.*'])}`,
});
const post = (tenant: string, body: unknown = { id: 'c1', name: 'n' }, headers: Record<string, string> = {}) =>
  gateway.http('/v1/tally/counters', {
    method: 'POST',
    headers: { ...bearer(tenant), 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
const get = (tenant: string, path = '/v1/tally/counters') => gateway.http(path, { headers: bearer(tenant) });
const UNDELIVERED_RETRY_MS = 1_000;
const cutWriteApi = async () => {
  await writeApi.cut();
  // the gateway's kept-alive connections see their end, as those of a role that went down a while ago
  await sleep(50);
};
const suffix = async (res: Response) =>
  String(((await res.json()) as { type: string }).type)
    .split('/')
    .pop();

beforeAll(async () => {
  upstream = await startFakeUpstream();
  writeApi = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(upstream.url).port) });
  gateway = await startTestPlatform({
    role: 'gateway',
    clock,
    env: {
      WRITE_API_URL: `http://127.0.0.1:${writeApi.port}`,
      READ_API_URL: upstream.url,
      UPSTREAM_UNDELIVERED_RETRY_MS: String(UNDELIVERED_RETRY_MS),
    },
  });
});
afterAll(async () => {
  await gateway?.close();
  await writeApi?.close();
  await upstream?.close();
});
beforeEach(async () => {
  // Let every circuit and tenant window of the previous test expire, and close them with one good call each.
  upstream.behaviour = 'ok';
  upstream.tenants.clear();
  upstream.failNext = 0;
  upstream.startingNext = 0;
  await writeApi.restore();
  clock.advance(120_000);
  await post('tenant-warm');
  await get('tenant-warm');
  upstream.hits = 0;
});

describe('an upstream that keeps failing (circuit breaker)', () => {
  it('opens after 5 consecutive failures: the 6th call answers 503 without reaching the upstream', async () => {
    upstream.behaviour = 'fail';
    for (let i = 0; i < 5; i += 1) {
      const res = await post(i % 2 ? 'tenant-a' : 'tenant-b');
      expect(res.status).toBe(502);
      expect(await suffix(res)).toBe('bad-gateway');
      expect(res.headers.get('retry-after')).toBe('2');
    }
    expect(upstream.hits).toBe(5);
    const sixth = await post('tenant-a');
    expect(sixth.status).toBe(503);
    expect(await suffix(sixth)).toBe('service-unavailable');
    // until the probe: the circuit stays open 30 s
    expect(sixth.headers.get('retry-after')).toBe('30');
    expect(upstream.hits).toBe(5);
  });

  it('lets one probe through after 30 s and closes when it succeeds', async () => {
    upstream.behaviour = 'fail';
    for (let i = 0; i < 5; i += 1) await post(i % 2 ? 'tenant-a' : 'tenant-b');
    upstream.behaviour = 'ok';
    clock.advance(29_000);
    expect((await post('tenant-a')).status).toBe(503);
    expect(upstream.hits).toBe(5);
    clock.advance(1_000);
    expect((await post('tenant-a')).status).toBe(201); // the probe
    expect(upstream.hits).toBe(6);
    expect((await post('tenant-b')).status).toBe(201); // closed again
    expect(upstream.hits).toBe(7);
  });

  it('opens again for 30 s when the probe fails', async () => {
    upstream.behaviour = 'fail';
    for (let i = 0; i < 5; i += 1) await post(i % 2 ? 'tenant-a' : 'tenant-b');
    clock.advance(30_000);
    expect((await post('tenant-a')).status).toBe(502);
    expect(upstream.hits).toBe(6);
    expect((await post('tenant-a')).status).toBe(503);
    expect(upstream.hits).toBe(6);
  });

  it('does not count failures more than 30 s apart as one streak', async () => {
    upstream.behaviour = 'fail';
    for (let i = 0; i < 4; i += 1) await post(i % 2 ? 'tenant-a' : 'tenant-b');
    clock.advance(31_000);
    await post('tenant-a');
    expect((await post('tenant-b')).status).toBe(502); // reached the upstream: still closed
    expect(upstream.hits).toBe(6);
  });

  it('answers 502 when the upstream drops the connection', async () => {
    upstream.behaviour = 'drop';
    const res = await get('tenant-a');
    expect(res.status).toBe(502);
    expect(await suffix(res)).toBe('bad-gateway');
  });
});

describe('a role restarting behind the gateway', () => {
  it('sends a POST again while the upstream answers that it is starting: the client gets 201, no breaker counts it', async () => {
    upstream.startingNext = 3;
    const res = await post('tenant-a');
    expect(res.status).toBe(201);
    expect(upstream.hits).toBe(4);
  });

  it('sends a POST again while the upstream refuses connections, until it listens again', async () => {
    await cutWriteApi();
    const answered = post('tenant-a');
    await sleep(200);
    await writeApi.restore();
    expect((await answered).status).toBe(201);
    expect(upstream.hits).toBe(1);
  });

  it('answers 503 with Retry-After once the upstream stayed away longer than UPSTREAM_UNDELIVERED_RETRY_MS, and opens no circuit', async () => {
    await cutWriteApi();
    for (let i = 0; i < 6; i += 1) {
      const started = Date.now();
      const res = await post(i % 2 ? 'tenant-a' : 'tenant-b');
      expect(res.status).toBe(503);
      expect(await suffix(res)).toBe('service-unavailable');
      expect(res.headers.get('retry-after')).toBe('1');
      expect(Date.now() - started).toBeGreaterThanOrEqual(UNDELIVERED_RETRY_MS - 50);
    }
    await writeApi.restore();
    // the circuit is closed: the next call reaches the upstream at once
    expect((await post('tenant-a')).status).toBe(201);
    expect(upstream.hits).toBe(1);
  });
});

describe('one tenant failing on a shared upstream (soft breaker)', () => {
  it('isolates that tenant while another keeps getting 200, and never opens the circuit for all', async () => {
    upstream.tenants.set('tenant-a', 'fail');
    for (let i = 0; i < 10; i += 1) expect((await post('tenant-a')).status).toBe(502);
    expect(upstream.hits).toBe(10);
    const isolated = await post('tenant-a');
    expect(isolated.status).toBe(503);
    expect(await suffix(isolated)).toBe('service-unavailable');
    expect(upstream.hits).toBe(10);
    for (let i = 0; i < 3; i += 1) expect((await post('tenant-b')).status).toBe(201);
    expect(upstream.hits).toBe(13);
  });

  it('lets the tenant back once its failures have left the 60 s window', async () => {
    upstream.tenants.set('tenant-a', 'fail');
    for (let i = 0; i < 10; i += 1) await post('tenant-a');
    expect((await post('tenant-a')).status).toBe(503);
    upstream.tenants.clear();
    clock.advance(61_000);
    expect((await post('tenant-a')).status).toBe(201);
  });
});

describe('retries and deadlines', () => {
  it('retries a GET that fails once, once: the upstream counts 2 hits and the client gets 200', async () => {
    upstream.failNext = 1;
    const res = await get('tenant-a');
    expect(res.status).toBe(200);
    expect(upstream.hits).toBe(2);
  });

  it('never retries a POST: 1 hit', async () => {
    upstream.failNext = 1;
    const res = await post('tenant-a');
    expect(res.status).toBe(502);
    expect(upstream.hits).toBe(1);
  });

  it('answers 504 gateway-timeout at the 5 s deadline of a slow upstream', async () => {
    upstream.behaviour = 'slow';
    const started = Date.now();
    const res = await get('tenant-a');
    const elapsed = Date.now() - started;
    expect(res.status).toBe(504);
    expect(await suffix(res)).toBe('gateway-timeout');
    expect(elapsed).toBeGreaterThanOrEqual(4_900);
    expect(elapsed).toBeLessThan(6_500);
    expect(upstream.hits).toBe(1);
  });
});

describe('the edge in front of the upstreams', () => {
  it('forwards the verified tenant and drops a tenant smuggled in header, query and body', async () => {
    const res = await post(
      'tenant-a',
      { id: 'c1', name: 'n', tenantId: 'tenant-evil' },
      { 'x-tenant-id': 'tenant-evil' },
    );
    expect(res.status).toBe(201);
    expect(res.headers.get('x-upstream')).toBe('fake');
    expect(res.headers.get('x-ratelimit-limit')).toBe('1000');
    const seen = upstream.last!;
    expect(seen.headers['x-tenant-id']).toBeUndefined();
    expect(seen.headers.authorization).toBeUndefined();
    const principal = JSON.parse(Buffer.from(String(seen.headers['x-platform-principal']), 'base64url').toString()) as {
      t: string;
      u: string;
    };
    expect(principal).toMatchObject({ t: 'tenant-a', u: 'user-1' });
    const q = await get('tenant-a', '/v1/tally/counters?tenantId=tenant-evil');
    expect(q.status).toBe(200); // an unknown query member is ignored; the tenant stays the token's
    expect(
      JSON.parse(Buffer.from(String(upstream.last!.headers['x-platform-principal']), 'base64url').toString()),
    ).toMatchObject({ t: 'tenant-a' });
  });

  it('refuses an invalid body, a missing permission and a missing token without a downstream call', async () => {
    expect((await post('tenant-a', { id: 42 })).status).toBe(400);
    const noPermission = await gateway.http('/v1/tally/counters', {
      headers: { authorization: `Bearer ${testToken('tenant-a', 'u', [])}` },
    });
    expect(noPermission.status).toBe(403);
    expect((await gateway.http('/v1/tally/counters')).status).toBe(401);
    expect(upstream.hits).toBe(0);
  });

  it('answers 404 module-not-found for a module the tenant has not installed, before any downstream call', async () => {
    setGatewayPorts(gateway.kernel, {
      installedModules: async (tenant) => (tenant === 'tenant-small' ? new Set(['money']) : 'all'),
    });
    try {
      const res = await get('tenant-small');
      expect(res.status).toBe(404);
      expect(await suffix(res)).toBe('module-not-found');
      expect(upstream.hits).toBe(0);
      expect((await get('tenant-a')).status).toBe(200);
    } finally {
      setGatewayPorts(gateway.kernel, { installedModules: async () => 'all' });
    }
  });
});
