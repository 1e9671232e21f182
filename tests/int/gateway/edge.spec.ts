import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeSnapshot } from '../../../gateway/versioning';
import { testToken } from '../../support/auth';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import { SMALL_TENANT, TENANT_ORIGIN } from './edge-fixture';

/** tally, plus routes that misbehave on purpose and two tenants' gateway ports (edge-fixture.ts) */
const services = ['tally', 'edge-fixture'] as const;

const ALLOWED = 'https://app.example.com';
let dev: TestPlatform;
let prod: TestPlatform;
let snapshots: string;
const auth = (tenant = 'tenant-a', permissions = ['tally.*']) => ({
  authorization: `Bearer ${testToken(tenant, 'user-1', permissions)}`,
});
const suffix = async (res: Response) =>
  String(((await res.json()) as { type: string }).type)
    .split('/')
    .pop();

beforeAll(async () => {
  snapshots = await mkdtemp(join(tmpdir(), 'api-snapshots-'));
  dev = await startTestPlatform({
    services,
    captureLogs: true,
    env: {
      PLATFORM_ENV: 'development',
      CORS_ALLOWED_ORIGINS: `${ALLOWED}, https://other.example.com`,
      BODY_LIMIT_BYTES: '2048',
      API_DEPRECATION: '2026-06-01T00:00:00Z',
      API_SUNSET: '2027-01-01T00:00:00Z',
      API_SNAPSHOT_DIR: snapshots,
    },
  });
  prod = await startTestPlatform({ services, env: { PLATFORM_ENV: 'production' } });
});
afterAll(async () => {
  await dev?.close();
  await prod?.close();
  await rm(snapshots, { recursive: true, force: true });
});

describe('CORS with configured origins', () => {
  it('allows a listed origin and names it, never a wildcard', async () => {
    const res = await dev.http('/v1/tally/counters', { headers: { ...auth(), origin: ALLOWED } });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    expect(res.headers.get('vary')).toMatch(/Origin/);
    expect(res.headers.get('access-control-expose-headers')).toMatch(/X-RateLimit-Remaining/);
  });

  it('refuses an origin nobody listed with 403', async () => {
    const res = await dev.http('/v1/tally/counters', { headers: { ...auth(), origin: 'https://evil.example.net' } });
    expect(res.status).toBe(403);
    expect(await suffix(res)).toBe('forbidden');
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    expect(res.headers.get('x-ratelimit-limit')).toBe('1000'); // an origin only a tenant could allow: checked, and counted, after authentication
  });

  it('leaves same-origin requests and requests without Origin alone', async () => {
    expect((await dev.http('/v1/tally/counters', { headers: { ...auth(), origin: dev.url } })).status).toBe(200);
    const plain = await dev.http('/v1/tally/counters', { headers: auth() });
    expect(plain.status).toBe(200);
    expect(plain.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('answers a preflight of a listed origin with 204 and the allowed methods and headers', async () => {
    const res = await dev.http('/v1/tally/counters', {
      method: 'OPTIONS',
      headers: {
        origin: ALLOWED,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type',
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    expect(res.headers.get('access-control-allow-methods')).toMatch(/POST/);
    expect(res.headers.get('access-control-allow-headers')).toMatch(/Authorization/);
    expect(res.headers.get('access-control-allow-methods')).not.toContain('*');
    expect(res.headers.get('x-ratelimit-remaining')).toEqual(expect.stringMatching(/^\d+$/));
  });

  it('refuses a preflight of an unknown origin with 403', async () => {
    const res = await dev.http('/v1/tally/counters', {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example.net', 'access-control-request-method': 'GET' },
    });
    expect(res.status).toBe(403);
    expect(res.headers.get('x-ratelimit-limit')).toBe('300'); // no token: counted by client address
  });

  it("allows an origin of the caller's tenant settings for that tenant only", async () => {
    const pre = await dev.http('/v1/tally/counters', {
      method: 'OPTIONS',
      headers: { origin: TENANT_ORIGIN, 'access-control-request-method': 'GET' },
    });
    expect(pre.status).toBe(204);
    const a = await dev.http('/v1/tally/counters', { headers: { ...auth('tenant-a'), origin: TENANT_ORIGIN } });
    expect(a.status).toBe(200);
    expect(a.headers.get('access-control-allow-origin')).toBe(TENANT_ORIGIN);
    const b = await dev.http('/v1/tally/counters', { headers: { ...auth('tenant-b'), origin: TENANT_ORIGIN } });
    expect(b.status).toBe(403);
  });
});

describe('CORS with CORS_ALLOWED_ORIGINS empty', () => {
  it('refuses every cross-origin request and preflight with 403', async () => {
    expect((await prod.http('/v1/tally/counters', { headers: { ...auth(), origin: ALLOWED } })).status).toBe(403);
    expect(
      (
        await prod.http('/v1/tally/counters', {
          method: 'OPTIONS',
          headers: { origin: ALLOWED, 'access-control-request-method': 'GET' },
        })
      ).status,
    ).toBe(403);
    expect((await prod.http('/v1/tally/counters', { headers: { ...auth(), origin: prod.url } })).status).toBe(200);
  });
});

describe('request bodies at the edge', () => {
  const json = { ...auth(), 'content-type': 'application/json' };
  it('answers a body over BODY_LIMIT_BYTES with 413', async () => {
    const res = await dev.http('/v1/tally/counters', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ id: 'x', name: 'n'.repeat(4000) }),
    });
    expect(res.status).toBe(413);
  });

  it('answers a POST body that is not JSON with 415', async () => {
    const res = await dev.http('/v1/tally/counters', {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/x-www-form-urlencoded' },
      body: 'id=x&name=y',
    });
    expect(res.status).toBe(415);
    expect(await suffix(res)).toBe('unsupported-media-type');
  });

  it('ignores a tenantId smuggled in body, query and X-Tenant-ID', async () => {
    const res = await dev.http('/v1/tally/counters?tenantId=tenant-b&tenant_id=tenant-b', {
      method: 'POST',
      headers: { ...json, 'x-tenant-id': 'tenant-b' },
      body: JSON.stringify({ id: 'smuggled', name: 's', tenantId: 'tenant-b' }),
    });
    expect(res.status).toBe(201);
    expect((await dev.http('/v1/tally/counters/smuggled', { headers: auth('tenant-b') })).status).toBe(404);
    expect(
      (await dev.http('/v1/tally/counters/smuggled', { headers: { ...auth('tenant-b'), 'x-tenant-id': 'tenant-a' } }))
        .status,
    ).toBe(404);
    expect((await dev.http('/v1/tally/counters/smuggled', { headers: auth('tenant-a') })).status).toBe(200);
  });

  it('answers 404 module-not-found for a module the tenant has not installed', async () => {
    const res = await dev.http('/v1/tally/counters', { headers: auth(SMALL_TENANT) });
    expect(res.status).toBe(404);
    expect(await suffix(res)).toBe('module-not-found');
  });
});

describe('response validation', () => {
  it('turns a response outside its schema into 500 and an error log in development', async () => {
    const res = await dev.http('/v1/edge-probe/bad-shape', { headers: auth() });
    expect(res.status).toBe(500);
    expect(await suffix(res)).toBe('internal-error');
    await expect.poll(() => dev.logLines().some((l) => l.level === 50 && l.msg === 'unexpected error')).toBe(true);
  });

  it('lets it pass in production', async () => {
    const res = await prod.http('/v1/edge-probe/bad-shape', { headers: auth() });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ n: 'not a number' });
  });
});

describe('a batch with failing items', () => {
  it('answers 207 with an RFC 9457 problem per failed item', async () => {
    const res = await dev.http('/v1/edge-probe/batch', {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify({ items: [1, -1, 0, 2] }),
    });
    expect(res.status).toBe(207);
    const body = (await res.json()) as {
      results: { index: number; status: number; data?: unknown; problem?: Record<string, unknown> }[];
      succeeded: number;
      failed: number;
    };
    expect(body.results.map((r) => r.status)).toEqual([200, 400, 500, 200]);
    expect(body).toMatchObject({ succeeded: 2, failed: 2 });
    expect(body.results[0]!.data).toEqual({ n: 1 });
    expect(body.results[1]!.problem).toMatchObject({
      status: 400,
      instance: '/v1/edge-probe/batch#/items/1',
      errors: [{ field: 'n', code: 'NEGATIVE' }],
    });
    expect(String(body.results[1]!.problem!.type)).toMatch(/\/validation-error$/);
    expect(body.results[2]!.problem).toMatchObject({ status: 500, traceId: expect.stringMatching(/^[0-9a-f]{32}$/) });
  });

  it('answers 200 when every item succeeds', async () => {
    const res = await dev.http('/v1/edge-probe/batch', {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify({ items: [1, 2] }),
    });
    expect(res.status).toBe(200);
  });
});

describe('versioning', () => {
  it('sends Deprecation and Sunset on /v1 when configured', async () => {
    const res = await dev.http('/v1/tally/counters', { headers: auth() });
    expect(res.headers.get('deprecation')).toBe(`@${Date.parse('2026-06-01T00:00:00Z') / 1000}`);
    expect(res.headers.get('sunset')).toBe('Fri, 01 Jan 2027 00:00:00 GMT');
    expect((await prod.http('/v1/tally/counters', { headers: auth() })).headers.get('deprecation')).toBeNull();
  });

  it('serves the immutable snapshot of a deprecated version at /api-docs/v{N}', async () => {
    expect(
      await writeSnapshot(
        'v0',
        { iam: { openapi: '3.1.0', info: { title: 'old', version: '0' }, paths: {} } },
        snapshots,
      ),
    ).toEqual(['iam']);
    expect(
      await writeSnapshot('v0', { iam: { openapi: '3.1.0', info: { title: 'rewritten', version: '0' } } }, snapshots),
    ).toEqual([]);
    expect(JSON.parse(await readFile(join(snapshots, 'v0', 'iam.json'), 'utf8'))).toMatchObject({
      info: { title: 'old' },
    });
    const page = await dev.http('/api-docs/v0');
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('/api-docs/v0/iam.json');
    const index = await dev.http('/api-docs/v0', { headers: { accept: 'application/json' } });
    expect(await index.json()).toEqual({
      version: 'v0',
      documents: [{ namespace: 'iam', url: '/api-docs/v0/iam.json' }],
    });
    const doc = await dev.http('/api-docs/v0/iam.json');
    expect(doc.status).toBe(200);
    expect(doc.headers.get('cache-control')).toContain('immutable');
    expect(await doc.json()).toMatchObject({ info: { title: 'old' } });
    expect((await dev.http('/api-docs/v7')).status).toBe(404);
    expect((await dev.http('/api-docs/v0/money.json')).status).toBe(404);
  });
});

describe('GET /health', () => {
  it('reports each configured component with its latency to an admin', async () => {
    const res = await dev.http('/health', { headers: auth('tenant-a', ['platform.*']) });
    expect(res.status).toBe(200);
    const report = (await res.json()) as {
      status: string;
      version: string;
      uptime: string;
      components: Record<string, { status: string; latencyMs: number | null; error: string | null }>;
    };
    expect(report).toMatchObject({ status: 'healthy', version: expect.any(String), uptime: expect.any(String) });
    expect(report.components.postgresql).toEqual({ status: 'healthy', latencyMs: expect.any(Number), error: null });
  });

  it('refuses a caller without an admin role (403) or without a token (401)', async () => {
    expect((await dev.http('/health', { headers: auth() })).status).toBe(403);
    expect((await dev.http('/health')).status).toBe(401);
  });
});
