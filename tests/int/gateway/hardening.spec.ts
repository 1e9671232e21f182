import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IdentityPlatform, Registered } from '../../support/identity';
import { PASSWORD, registerUser, startIdentityPlatform, uniqueEmail } from '../../support/identity';

let p: IdentityPlatform;
let user: Registered;
beforeAll(async () => {
  p = await startIdentityPlatform({ services: ['identity', 'tally', 'hardening-fixture'] });
  user = await registerUser(p);
});
afterAll(async () => {
  await p?.close();
});

const raw = (path: string, init: RequestInit = {}) => fetch(`${p.url}${path}`, init);
const expectSecurityHeaders = (headers: Headers, label: string) => {
  expect([label, headers.get('x-content-type-options')]).toEqual([label, 'nosniff']);
  expect([label, headers.get('x-frame-options')]).toEqual([label, 'DENY']);
  expect([label, headers.get('content-security-policy')]).toEqual([
    label,
    expect.stringContaining("frame-ancestors 'none'"),
  ]);
  expect([label, headers.get('referrer-policy')]).toEqual([label, 'no-referrer']);
};

describe('security headers', () => {
  it('are on a 200, a 4xx and a 5xx', async () => {
    const ok = await raw('/v1/auth/providers');
    const missing = await raw('/v1/no/such/route');
    const failed = await raw('/v1/test/boom');
    expect([ok.status, missing.status, failed.status]).toEqual([200, 404, 500]);
    for (const [label, res] of [
      ['200', ok],
      ['404', missing],
      ['500', failed],
    ] as const)
      expectSecurityHeaders(res.headers, label);
  });

  it('every answer that carries tokens or secrets says Cache-Control: no-store', async () => {
    const email = uniqueEmail();
    const register = await p.api('/auth/register', { body: { email, password: PASSWORD } });
    const login = await p.api('/auth/login', { body: { email, password: PASSWORD } });
    const refresh = await p.api('/auth/refresh', { body: { refreshToken: login.body.refreshToken } });
    const mfa = await p.api('/auth/mfa/enable', { token: login.body.accessToken, body: {} });
    const switched = await p.api('/auth/switch-tenant', {
      token: refresh.body.accessToken,
      body: { tenantId: register.body.tenant.id },
    });
    for (const [label, res] of [
      ['register', register],
      ['login', login],
      ['refresh', refresh],
      ['mfa enable', mfa],
      ['switch-tenant', switched],
    ] as const) {
      expect([label, res.status < 300, res.headers.get('cache-control')]).toEqual([label, true, 'no-store']);
    }
  });

  it('the interactive reference gets a policy that lets its own scripts run', async () => {
    const docs = await raw('/api-docs/iam');
    expect(docs.status).toBe(200);
    expect(docs.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
  });

  it('HSTS is sent when the public root is https, and only then', async () => {
    expect((await raw('/live')).headers.get('strict-transport-security')).toBeNull();
    const secure = await startIdentityPlatform({ env: { ROOT_URL: 'https://api.example.test' } });
    try {
      expect((await fetch(`${secure.url}/live`)).headers.get('strict-transport-security')).toMatch(/max-age=\d+/);
    } finally {
      await secure.close();
    }
  });
});

/** sends bytes on a fresh connection and returns the raw answer */
const rawHttp = (bytes: string) =>
  new Promise<string>((resolve, reject) => {
    const url = new URL(p.url);
    const socket = connect(Number(url.port), url.hostname);
    let answer = '';
    socket.on('data', (d) => {
      answer += d.toString('latin1');
    });
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
    socket.write(bytes);
  });

describe('a corpus of bad edges, before authentication', () => {
  const deep = (n: number) => `{"email":${'['.repeat(n)}${']'.repeat(n)},"password":"x"}`;
  const corpus: [string, string, RequestInit, number][] = [
    ['NUL in a path', '/v1/users/a%00b', {}, 400],
    ['NUL in a query', '/v1/users?page_token=%00', {}, 400],
    [
      'NUL in JSON',
      '/v1/auth/login',
      { method: 'POST', body: JSON.stringify({ email: 'a\u0000b@x.test', password: 'x' }) },
      400,
    ],
    [
      'a lone surrogate in JSON',
      '/v1/auth/login',
      { method: 'POST', body: '{"email":"\\ud800@x.test","password":"x"}' },
      400,
    ],
    [
      'a lone low surrogate in a key',
      '/v1/auth/login',
      { method: 'POST', body: '{"\\udc00":"x","email":"a@x.test","password":"x"}' },
      400,
    ],
    ['100,000-deep JSON', '/v1/auth/login', { method: 'POST', body: deep(100_000) }, 400],
    ['JSON just over the depth bound', '/v1/auth/login', { method: 'POST', body: deep(65) }, 400],
    ['a path parameter over its length', `/v1/users/${'x'.repeat(500)}`, {}, 400],
    ['malformed percent-encoding', '/v1/users/%E0%A4%A', {}, 400],
    ['an unknown method', '/v1/auth/login', { method: 'QUERY', body: '{' }, 405],
    ['PROPFIND', '/v1/users', { method: 'PROPFIND' }, 405],
  ];
  for (const [label, path, init, status] of corpus) {
    it(`${label}: ${status}, a problem that does not echo the input`, async () => {
      const res = await raw(path, {
        ...init,
        headers: { 'content-type': 'application/json', ...(init.headers ?? {}) },
      });
      const text = await res.text();
      expect([label, res.status]).toEqual([label, status]);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(text)).toMatchObject({ status, type: expect.any(String), traceId: expect.any(String) });
      expect(text).not.toContain('x'.repeat(200));
      expect(text).not.toContain('%E0%A4%A');
      expectSecurityHeaders(res.headers, label);
    });
  }

  it('headers over the size the server accepts: 431 problem with the security headers', async () => {
    const answer = await rawHttp(`GET /v1/auth/providers HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(40_000)}\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 431 /);
    expect(answer).toMatch(/content-type: application\/problem\+json/i);
    expect(answer).toMatch(/x-content-type-options: nosniff/i);
    expect(answer).not.toContain('a'.repeat(100));
  });

  it('a malformed request line: 400 problem', async () => {
    const answer = await rawHttp('GARBAGE\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toMatch(/application\/problem\+json/);
  });

  it('the server is healthy after the corpus', async () => {
    expect((await raw('/live')).status).toBe(200);
    expect((await p.api('/auth/login', { body: { email: user.email, password: PASSWORD } })).status).toBe(200);
  });
});

describe('a body-less endpoint', () => {
  it('accepts an empty body sent with Content-Type application/json', async () => {
    const res = await raw('/v1/auth/request-verify-email', {
      method: 'POST',
      headers: { authorization: `Bearer ${user.accessToken}`, 'content-type': 'application/json' },
      body: '',
    });
    expect(res.status).toBe(202);
  });
});
