import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IdentityPlatform, Registered } from '../../support/identity';
import { mailToken, PASSWORD, registerUser, startIdentityPlatform, uniqueEmail } from '../../support/identity';

let p: IdentityPlatform;
beforeAll(async () => {
  p = await startIdentityPlatform();
});
afterAll(async () => {
  await p?.close();
});

describe('email verification', () => {
  it('the token from the registration mail verifies the address once, also with 20 concurrent copies', async () => {
    const user = await registerUser(p);
    const token = await mailToken(p, user.email, 'verify-email');
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => p.api('/auth/verify-email', { body: { token } })),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.find((a) => a.status === 200)!.body).toEqual({ email_verified: true });
    expect(answers.filter((a) => a.status === 401)).toHaveLength(19);
    expect((await p.api('/auth/me', { token: user.accessToken })).body.emailVerified).toBe(true);
  });

  it('resend answers 202 three times an hour, then 429 with Retry-After', async () => {
    const user = await registerUser(p);
    for (let i = 0; i < 3; i += 1)
      expect((await p.api('/auth/request-verify-email', { token: user.accessToken, body: {} })).status).toBe(202);
    const limited = await p.api('/auth/request-verify-email', { token: user.accessToken, body: {} });
    expect(limited.status).toBe(429);
    expect(limited.body.type).toMatch(/\/rate-limit-exceeded$/);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('an expired token answers 401 token-expired', async () => {
    const user = await registerUser(p);
    const token = await mailToken(p, user.email, 'verify-email');
    p.clock.advance(24 * 3600_000 + 1000);
    try {
      const res = await p.api('/auth/verify-email', { body: { token } });
      expect(res.status).toBe(401);
      expect(res.body.type).toMatch(/\/token-expired$/);
    } finally {
      p.clock.reset();
    }
  });
});

describe('password reset', () => {
  it('always answers 202 without a body; the mailed token resets once and revokes every refresh token', async () => {
    const user = await registerUser(p);
    const before = p.smtp.messages.length;
    const known = await p.api('/auth/request-reset', { body: { email: user.email } });
    const unknown = await p.api('/auth/request-reset', { body: { email: uniqueEmail() } });
    expect([known.status, unknown.status]).toEqual([202, 202]);
    expect([known.body, unknown.body]).toEqual([null, null]);
    const token = await mailToken(p, user.email, 'reset', before);
    const weak = await p.api('/auth/reset-password', { body: { token, password: 'short' } });
    expect(weak.status).toBe(400);
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        p.api('/auth/reset-password', { body: { token, password: 'a brand new passphrase 77' } }),
      ),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.find((a) => a.status === 200)!.body.message).toEqual(expect.any(String));
    expect((await p.api('/auth/refresh', { body: { refreshToken: user.refreshToken } })).status).toBe(401);
    expect((await p.api('/auth/login', { body: { email: user.email, password: PASSWORD } })).status).toBe(401);
    expect(
      (await p.api('/auth/login', { body: { email: user.email, password: 'a brand new passphrase 77' } })).status,
    ).toBe(200);
  });

  it('a reset token lives one hour', async () => {
    const user = await registerUser(p);
    const before = p.smtp.messages.length;
    await p.api('/auth/request-reset', { body: { email: user.email } });
    const token = await mailToken(p, user.email, 'reset', before);
    p.clock.advance(3600_000 + 1000);
    try {
      const res = await p.api('/auth/reset-password', { body: { token, password: 'a brand new passphrase 77' } });
      expect(res.body.type).toMatch(/\/token-expired$/);
    } finally {
      p.clock.reset();
    }
  });
});

describe('invitations', () => {
  let owner: Registered;
  beforeAll(async () => {
    owner = await registerUser(p);
  });

  it('invite by role_id answers 202 with the invite; accept-invite answers 201 with a snake_case pair and a verified member', async () => {
    const role = await p.api('/rbac/roles', {
      token: owner.accessToken,
      body: { name: 'Member', permissions: ['users.list'] },
    });
    const email = uniqueEmail('invitee');
    const res = await p.api('/auth/invite', { token: owner.accessToken, body: { email, role_id: role.body.id } });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ invite_id: expect.any(String), email, expires_at: expect.any(String) });
    const token = await mailToken(p, email, 'invite');
    const accepted = await p.api('/auth/accept-invite', { body: { token, name: 'Grace Hopper', password: PASSWORD } });
    expect(accepted.status).toBe(201);
    expect(accepted.body).toMatchObject({
      token_type: 'Bearer',
      expires_in: 900,
      user: { email, email_verified: true, roles: ['Member'], tenant_id: owner.tenantId, mfa_enabled: false },
    });
    const again = await p.api('/auth/accept-invite', { body: { token, name: 'Grace Hopper', password: PASSWORD } });
    expect(again.status).toBe(401);
  });

  it('invite by role names works too; an existing member gets 202 without a body and a duplicate-invite notice', async () => {
    const res = await p.api('/auth/invite', {
      token: owner.accessToken,
      body: { email: owner.email, roles: ['Owner'] },
    });
    expect(res.status).toBe(202);
    expect(res.body).toBeNull();
    await p.smtp.waitFor(
      (m) => m.envelope.to.includes(owner.email) && m.parsed.headers.get('x-platform-purpose') === 'duplicate-invite',
    );
  });

  it('an invite for a person registered elsewhere adds a second tenant: login then asks to choose', async () => {
    const other = await registerUser(p);
    const res = await p.api('/auth/invite', {
      token: owner.accessToken,
      body: { email: other.email, roles: ['Owner'] },
    });
    expect(res.status).toBe(202);
    const token = await mailToken(p, other.email, 'invite');
    expect(
      (await p.api('/auth/accept-invite', { body: { token, name: 'x', password: 'wrong password for sure' } })).status,
    ).toBe(401);
    const accepted = await p.api('/auth/accept-invite', { body: { token, name: 'x', password: PASSWORD } });
    expect(accepted.status).toBe(201);
    const login = await p.api('/auth/login', { body: { email: other.email, password: PASSWORD } });
    expect(login.body).toMatchObject({ requiresTenantSelection: true, sessionToken: expect.any(String) });
    expect(login.body.tenants.map((t: { id: string }) => t.id).sort()).toEqual([owner.tenantId, other.tenantId].sort());
    expect(login.body.tenants[0]).toMatchObject({
      name: expect.any(String),
      logoUrl: expect.any(String),
      role: 'Owner',
    });
    const selected = await p.api('/auth/select-tenant', {
      body: { sessionToken: login.body.sessionToken, tenantId: owner.tenantId, rememberChoice: true },
    });
    expect(selected.status).toBe(200);
    const me = await p.api('/auth/me', { token: selected.body.accessToken });
    expect(me.body.tenantId).toBe(owner.tenantId);
    // remembered: the next login goes straight to that tenant
    const next = await p.api('/auth/login', { body: { email: other.email, password: PASSWORD } });
    expect(next.body.accessToken).toEqual(expect.any(String));
    const tenants = await p.api('/auth/tenants', { token: next.body.accessToken });
    expect(tenants.body.data).toHaveLength(2);
    const switched = await p.api('/auth/switch-tenant', {
      token: next.body.accessToken,
      body: { tenantId: other.tenantId },
    });
    expect(switched.status).toBe(200);
    expect((await p.api('/auth/me', { token: switched.body.accessToken })).body.tenantId).toBe(other.tenantId);
    const foreign = await registerUser(p);
    expect(
      (await p.api('/auth/switch-tenant', { token: next.body.accessToken, body: { tenantId: foreign.tenantId } }))
        .status,
    ).toBe(404);
  });

  it('a session token lives 5 minutes', async () => {
    const other = await registerUser(p);
    const res = await p.api('/auth/invite', {
      token: owner.accessToken,
      body: { email: other.email, roles: ['Owner'] },
    });
    expect(res.status).toBe(202);
    const token = await mailToken(p, other.email, 'invite');
    await p.api('/auth/accept-invite', { body: { token, name: 'x', password: PASSWORD } });
    const login = await p.api('/auth/login', { body: { email: other.email, password: PASSWORD } });
    p.clock.advance(5 * 60_000 + 1000);
    try {
      const res2 = await p.api('/auth/select-tenant', {
        body: { sessionToken: login.body.sessionToken, tenantId: owner.tenantId },
      });
      expect(res2.body.type).toMatch(/\/token-expired$/);
    } finally {
      p.clock.reset();
    }
  });
});
