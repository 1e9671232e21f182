import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testToken } from '../../support/auth';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import { sendSlowly } from '../../support/slow-sender';

let platform: TestPlatform;
const token = testToken('tenant-a', 'user-1', ['tally.*']);
const auth = { authorization: `Bearer ${token}` };
const json = { ...auth, 'content-type': 'application/json' };

beforeAll(async () => {
  platform = await startTestPlatform({ env: { BODY_LIMIT_BYTES: '2048' } });
});
afterAll(async () => platform.close());

const problem = async (res: Response) => {
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const body = (await res.json()) as Record<string, unknown>;
  expect(body.instance).toEqual(expect.any(String));
  expect(body.traceId).toMatch(/^[0-9a-f]{32}$/);
  expect(body.title).toEqual(expect.any(String));
  expect(body.detail).toEqual(expect.any(String));
  expect(body.status).toBe(res.status);
  return body;
};
const suffix = (body: Record<string, unknown>) => String(body.type).split('/').pop();

describe('a request the platform cannot route', () => {
  it('answers an unknown path with 404 not-found', async () => {
    const res = await platform.http('/v1/nothing/here', { headers: auth });
    expect(res.status).toBe(404);
    const body = await problem(res);
    expect(suffix(body)).toBe('not-found');
    expect(body.type).toBe(`${platform.kernel.config.problemsBaseUrl}/not-found`);
    expect(body.instance).toBe('/v1/nothing/here');
  });

  it('answers a known path with another method with 405 and the allowed methods', async () => {
    const res = await platform.http('/v1/tally/counters/abc', { method: 'DELETE', headers: auth });
    expect(res.status).toBe(405);
    expect(suffix(await problem(res))).toBe('method-not-allowed');
    expect(res.headers.get('allow')).toBe('GET');
  });

  it('serves the same handler under /api/v1', async () => {
    const res = await platform.http('/api/v1/tally/counters', { headers: auth });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ data: [] });
  });

  it('keeps the trace id of a W3C traceparent in the problem', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await platform.http('/v1/nope', {
      headers: { ...auth, traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    });
    expect((await problem(res)).traceId).toBe(traceId);
  });
});

describe('a body the platform cannot accept', () => {
  it('gives the 413 to a client still sending a body over the limit, and keeps its connection', async () => {
    // the body is refused by its declared length before a byte is read; the client sends on after the answer
    const outcome = await sendSlowly(platform.url, {
      method: 'POST',
      path: '/v1/tally/counters',
      headers: { ...json },
      body: Buffer.from(JSON.stringify({ id: 'x', name: 'n'.repeat(300_000) })),
      sendBeforeAnswer: 1024,
    });
    expect(outcome).toEqual({
      first: expect.stringMatching(/^HTTP\/1\.1 413/),
      second: expect.stringMatching(/^HTTP\/1\.1 200/),
    });
  });

  it('keeps the connection after a body it read whole and refused (not JSON)', async () => {
    const outcome = await sendSlowly(platform.url, {
      method: 'POST',
      path: '/v1/tally/counters',
      headers: { ...json },
      body: Buffer.from('{"id": '),
      sendBeforeAnswer: 7,
    });
    expect(outcome).toEqual({
      first: expect.stringMatching(/^HTTP\/1\.1 400/),
      second: expect.stringMatching(/^HTTP\/1\.1 200/),
    });
  });

  it('answers a body over the limit with 413', async () => {
    const res = await platform.http('/v1/tally/counters', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ id: 'x', name: 'n'.repeat(5000) }),
    });
    expect(res.status).toBe(413);
    expect(suffix(await problem(res))).toBe('payload-too-large');
  });

  it('answers a non-JSON content type with 415 naming the type received', async () => {
    const res = await platform.http('/v1/tally/counters', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'text/plain; charset=utf-8' },
      body: 'id=x',
    });
    expect(res.status).toBe(415);
    const body = await problem(res);
    expect(suffix(body)).toBe('unsupported-media-type');
    expect(body.detail).toContain('"text/plain; charset=utf-8"');
  });

  it('answers a body without a content type with 415', async () => {
    const res = await platform.http('/v1/tally/counters', {
      method: 'POST',
      headers: auth,
      body: new Blob(['{"id":"x","name":"y"}']),
    });
    expect(res.status).toBe(415);
    const body = await problem(res);
    expect(suffix(body)).toBe('unsupported-media-type');
    expect(body.detail).toContain('(none)');
  });

  it('answers malformed JSON with 400 validation-error', async () => {
    const res = await platform.http('/v1/tally/counters', { method: 'POST', headers: json, body: '{"id": "x", ' });
    expect(res.status).toBe(400);
    const body = await problem(res);
    expect(suffix(body)).toBe('validation-error');
    expect(body.errors).toEqual([expect.objectContaining({ field: 'body', code: 'MALFORMED_JSON' })]);
  });

  it('answers wrong types with 400 and one error per field', async () => {
    const res = await platform.http('/v1/tally/counters', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ id: 42, name: ['x'] }),
    });
    expect(res.status).toBe(400);
    const body = await problem(res);
    expect(suffix(body)).toBe('validation-error');
    const fields = (body.errors as { field: string; message: string; code: string }[]).map((e) => e.field).sort();
    expect(fields).toEqual(['id', 'name']);
  });

  it('answers a missing field with 400 naming the field', async () => {
    const res = await platform.http('/v1/tally/counters', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ id: 'x' }),
    });
    expect(res.status).toBe(400);
    expect((await problem(res)).errors).toEqual([expect.objectContaining({ field: 'name' })]);
  });
});

describe('a list endpoint', () => {
  it.each(['0', '101', 'abc', '-1', '1.5'])('refuses page_size=%s with 400', async (size) => {
    const res = await platform.http(`/v1/tally/counters?page_size=${size}`, { headers: auth });
    expect(res.status).toBe(400);
    const body = await problem(res);
    expect(suffix(body)).toBe('validation-error');
    expect(body.errors).toEqual([expect.objectContaining({ field: 'page_size' })]);
  });

  it('refuses a page_token it did not make with 400', async () => {
    const res = await platform.http('/v1/tally/counters?page_token=not-a-token', { headers: auth });
    expect(res.status).toBe(400);
    expect((await problem(res)).errors).toEqual([expect.objectContaining({ field: 'page_token' })]);
  });

  it('pages through every item once with opaque tokens', async () => {
    for (let i = 0; i < 5; i += 1) {
      const res = await platform.http('/v1/tally/counters', {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ id: `c${i}`, name: `counter ${i}` }),
      });
      expect(res.status).toBe(201);
    }
    const seen: string[] = [];
    let token: string | undefined;
    do {
      const res = await platform.http(`/v1/tally/counters?page_size=2${token ? `&page_token=${token}` : ''}`, {
        headers: auth,
      });
      const page = (await res.json()) as { data: { id: string }[]; next_page_token?: string };
      expect(page.data.length).toBeLessThanOrEqual(2);
      seen.push(...page.data.map((c) => c.id));
      token = page.next_page_token;
    } while (token);
    expect(seen).toEqual(['c0', 'c1', 'c2', 'c3', 'c4']);
  });
});

describe('authentication and permissions', () => {
  it('answers a protected route without a token with 401', async () => {
    const res = await platform.http('/v1/tally/counters');
    expect(res.status).toBe(401);
    expect(suffix(await problem(res))).toBe('unauthorized');
  });

  it('answers a token without the permission with 403', async () => {
    const res = await platform.http('/v1/tally/counters', {
      headers: { authorization: `Bearer ${testToken('tenant-a', 'u2', ['billing.*'])}` },
    });
    expect(res.status).toBe(403);
    expect(suffix(await problem(res))).toBe('forbidden');
  });

  it("answers another tenant's counter with 404", async () => {
    await platform.http('/v1/tally/counters', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ id: 'mine', name: 'a' }),
    });
    const other = { authorization: `Bearer ${testToken('tenant-b', 'u9', ['tally.*'])}` };
    expect((await platform.http('/v1/tally/counters/mine', { headers: other })).status).toBe(404);
    expect((await platform.http('/v1/tally/counters/mine', { headers: auth })).status).toBe(200);
  });
});

describe('operational endpoints', () => {
  it('answers /live and /ready once prepared', async () => {
    expect(await (await platform.http('/live')).json()).toEqual({ status: 'ok' });
    expect(await (await platform.http('/ready')).json()).toEqual({ status: 'ready' });
  });

  it('requires an admin for /health and reports configured components', async () => {
    expect((await platform.http('/health')).status).toBe(401);
    expect((await platform.http('/health', { headers: auth })).status).toBe(403);
    const res = await platform.http('/health', {
      headers: { authorization: `Bearer ${testToken('t', 'owner', ['platform.*'])}` },
    });
    const report = (await res.json()) as {
      status: string;
      components: Record<string, { status: string; latencyMs: number }>;
    };
    // every component answers; one may answer slower than 1 s on a busy machine (degraded, 207),
    // which tests/unit/ops/health.spec.ts covers — here the code must match the report
    expect(Object.values(report.components).map((c) => c.status)).not.toContain('unhealthy');
    expect(res.status).toBe(report.status === 'healthy' ? 200 : 207);
    expect(report.components.postgresql).toMatchObject({
      status: expect.stringMatching(/^(healthy|degraded)$/),
      latencyMs: expect.any(Number),
    });
  });

  it('serves an OpenAPI 3.1 document per namespace and its reference page', async () => {
    const doc = (await (await platform.http('/api/v1/data/openapi.json')).json()) as {
      openapi: string;
      paths: Record<string, unknown>;
    };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v1/tally/counters', '/v1/tally/counters/{id}']));
    // a namespace no installed service serves has no document: 404, a problem
    const money = await platform.http('/api/v1/money/openapi.json');
    expect(money.status).toBe(404);
    expect(suffix(await problem(money))).toBe('not-found');
    expect((await platform.http('/api-docs/money')).status).toBe(404);
    const page = await platform.http('/api-docs/data');
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const html = await page.text();
    expect(html).toContain('/api/v1/data/openapi.json');
    // every asset the page names is served (styled: swagger-ui.css)
    const assets = [...html.matchAll(/(?:href|src)="(\/api-docs\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets).toEqual(
      expect.arrayContaining(['/api-docs/assets/swagger-ui.css', '/api-docs/assets/swagger-ui-bundle.js']),
    );
    for (const asset of assets) expect((await platform.http(asset)).status, asset).toBe(200);
    expect((await platform.http('/api-docs/nope')).status).toBe(404);
  });

  it('serves a Redoc reference per namespace from the installed bundle (no CDN)', async () => {
    const page = await platform.http('/api-docs/data/redoc');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const html = await page.text();
    expect(html).toContain('spec-url="/api/v1/data/openapi.json"');
    expect(html).not.toMatch(/https?:\/\//);
    const bundle = await platform.http('/api-docs/assets/redoc.standalone.js');
    expect(bundle.status).toBe(200);
    expect(bundle.headers.get('content-type')).toMatch(/javascript/);
    expect((await platform.http('/api-docs/money/redoc')).status).toBe(404);
  });
});
