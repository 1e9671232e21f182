import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IdentityPlatform, Registered } from '../../support/identity';
import { addMember, PASSWORD, registerUser, startIdentityPlatform, uniqueEmail } from '../../support/identity';

let p: IdentityPlatform;
beforeAll(async () => {
  p = await startIdentityPlatform();
});
afterAll(async () => {
  await p?.close();
});

describe('registration', () => {
  it('creates a user, a tenant and its Owner role, and answers 201 with a session', async () => {
    const email = uniqueEmail();
    const res = await p.api('/auth/register', { body: { email, password: PASSWORD, firstName: 'Ada' } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      accessToken: expect.any(String),
      refreshToken: expect.any(String),
      expiresAt: expect.any(String),
    });
    expect(res.body.user).toMatchObject({
      email,
      roles: ['Owner'],
      status: 'active',
      emailVerified: false,
      mfaEnabled: false,
      tenantId: res.body.tenant.id,
    });
    const me = await p.api('/auth/me', { token: res.body.accessToken });
    expect(me.status).toBe(200);
    expect(me.body.permissions).toEqual(expect.arrayContaining(['users.create', 'roles.assign']));
    expect(me.body.permissions.some((x: string) => x.startsWith('platform.'))).toBe(false);
  });

  it('refuses a duplicate email with 409 conflict', async () => {
    const { email } = await registerUser(p);
    const res = await p.api('/auth/register', { body: { email, password: PASSWORD } });
    expect(res.status).toBe(409);
    expect(res.body.type).toMatch(/\/conflict$/);
  });

  it('refuses a short password (TOO_SHORT) and a breached one (BREACHED_PASSWORD)', async () => {
    const short = await p.api('/auth/register', { body: { email: uniqueEmail(), password: 'short' } });
    expect(short.status).toBe(400);
    expect(short.body.errors[0].code).toBe('TOO_SHORT');
    const breached = await p.api('/auth/register', { body: { email: uniqueEmail(), password: 'password1234' } });
    expect(breached.status).toBe(400);
    expect(breached.body.errors.map((e: { code: string }) => e.code)).toContain('BREACHED_PASSWORD');
  });

  it('publishes auth.user.created and auth.user.logged_in to platform.auth.events', async () => {
    const { userId } = await registerUser(p);
    const { rows } = await p.kernel.db.query<{ type: string }>(
      "SELECT type FROM es.events WHERE data->>'userId' = $1 ORDER BY position",
      [userId],
    );
    expect(rows.map((r) => r.type)).toEqual(
      expect.arrayContaining(['auth.user.created', 'auth.user.logged_in', 'auth.member.added']),
    );
  });
});

describe('login', () => {
  let user: Registered;
  beforeAll(async () => {
    user = await registerUser(p);
  });

  it('answers a camelCase pair for the right password', async () => {
    const res = await p.api('/auth/login', { body: { email: user.email, password: PASSWORD } });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['accessToken', 'expiresAt', 'refreshToken']);
  });

  it('answers 401 invalid-credentials for a wrong password and for an unknown email alike', async () => {
    const wrong = await p.api('/auth/login', { body: { email: user.email, password: 'not the password at all' } });
    const unknown = await p.api('/auth/login', { body: { email: uniqueEmail(), password: 'not the password at all' } });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body.type).toMatch(/\/invalid-credentials$/);
    expect({ ...wrong.body, traceId: '' }).toEqual({ ...unknown.body, traceId: '' });
  });

  it('issues ES256 tokens with the spec claims and a kid published in the JWKS', async () => {
    const [header, payload] = user.accessToken
      .split('.')
      .slice(0, 2)
      .map((x) => JSON.parse(Buffer.from(x, 'base64url').toString()));
    expect(header).toMatchObject({ alg: 'ES256', typ: 'JWT' });
    expect(payload).toMatchObject({
      sub: user.userId,
      email: user.email,
      tenantId: user.tenantId,
      roles: ['Owner'],
      aud: 'platform',
    });
    expect(payload.exp - payload.iat).toBe(900);
    const jwks = await p.api('/.well-known/jwks.json');
    expect(jwks.status).toBe(200);
    expect(jwks.body.keys.map((k: { kid: string }) => k.kid)).toContain(header.kid);
    expect(jwks.body.keys[0].d).toBeUndefined();
  });

  it('is served under /api/v1 too', async () => {
    const res = await fetch(`${p.url}/api/v1/auth/me`, { headers: { authorization: `Bearer ${user.accessToken}` } });
    expect(res.status).toBe(200);
  });
});

describe('refresh tokens', () => {
  it('rotate on every use: the old one is refused after the grace window and the family is revoked', async () => {
    const user = await registerUser(p);
    const first = await p.api('/auth/refresh', { body: { refreshToken: user.refreshToken } });
    expect(first.status).toBe(200);
    expect(first.body.refreshToken).not.toBe(user.refreshToken);
    p.clock.advance(11_000);
    try {
      const reuse = await p.api('/auth/refresh', { body: { refreshToken: user.refreshToken } });
      expect(reuse.status).toBe(401);
      // the family is gone: the newest token no longer works either
      const next = await p.api('/auth/refresh', { body: { refreshToken: first.body.refreshToken } });
      expect(next.status).toBe(401);
    } finally {
      p.clock.reset();
    }
  });

  it('give the same new pair to concurrent refreshes inside the grace window', async () => {
    const user = await registerUser(p);
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => p.api('/auth/refresh', { body: { refreshToken: user.refreshToken } })),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect(new Set(answers.map((a) => a.body.refreshToken)).size).toBe(1);
    expect(new Set(answers.map((a) => a.body.accessToken)).size).toBe(1);
    const later = await p.api('/auth/refresh', { body: { refreshToken: user.refreshToken } });
    expect(later.body.refreshToken).toBe(answers[0]!.body.refreshToken);
  });

  it('expire 7 days after login (token-expired)', async () => {
    const user = await registerUser(p);
    p.clock.advance(7 * 24 * 3600_000 + 1000);
    try {
      const res = await p.api('/auth/refresh', { body: { refreshToken: user.refreshToken } });
      expect(res.status).toBe(401);
      expect(res.body.type).toMatch(/\/token-expired$/);
    } finally {
      p.clock.reset();
    }
  });

  it('are revoked by logout', async () => {
    const user = await registerUser(p);
    const out = await p.api('/auth/logout', { token: user.accessToken, body: { refreshToken: user.refreshToken } });
    expect(out.status).toBe(204);
    const res = await p.api('/auth/refresh', { body: { refreshToken: user.refreshToken } });
    expect(res.status).toBe(401);
  });

  it('refuse garbage with 401', async () => {
    const res = await p.api('/auth/refresh', { body: { refreshToken: 'x'.repeat(43) } });
    expect(res.status).toBe(401);
  });
});

describe('access tokens', () => {
  it('expire after 15 minutes (401 token-expired)', async () => {
    const user = await registerUser(p);
    p.clock.advance(16 * 60_000);
    try {
      const res = await p.api('/auth/me', { token: user.accessToken });
      expect(res.status).toBe(401);
      expect(res.body.type).toMatch(/\/token-expired$/);
    } finally {
      p.clock.reset();
    }
  });

  it('are required: none or a bad one is 401, a missing permission 403', async () => {
    expect((await p.api('/auth/me')).status).toBe(401);
    expect((await p.api('/auth/me', { token: 'abc.def.ghi' })).status).toBe(401);
    const user = await registerUser(p);
    const role = await p.api('/rbac/roles', {
      token: user.accessToken,
      body: { name: 'Reader', permissions: ['users.list'] },
    });
    const created = await addMember(p, user, { role_ids: [role.body.id] });
    const login = await p.api('/auth/login', { body: { email: created.email, password: PASSWORD } });
    expect((await p.api('/users', { token: login.body.accessToken })).status).toBe(200);
    expect((await p.api('/rbac/roles', { token: login.body.accessToken })).status).toBe(403);
  });
});
