import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IdentityPlatform, Registered } from '../../support/identity';
import { addMember, mailToken, registerUser, startIdentityPlatform, uniqueEmail } from '../../support/identity';

/** Identity contract defects found from outside (issue 9), each with the answer the spec asks for. */
let p: IdentityPlatform;
let owner: Registered;
beforeAll(async () => {
  p = await startIdentityPlatform();
  owner = await registerUser(p);
});
afterAll(async () => {
  await p?.close();
});

const suffix = (res: { body: { type?: string } }) =>
  String(res.body?.type ?? '')
    .split('/')
    .pop();

describe('POST /users with more roles than a user may hold', () => {
  it('answers 400 rbac-limit-exceeded for 51 role ids, not validation-error', async () => {
    const ids = Array.from({ length: 51 }, (_, i) => `00000000-0000-7000-8000-${String(i).padStart(12, '0')}`);
    const res = await p.api('/users', { token: owner.accessToken, body: { email: uniqueEmail(), role_ids: ids } });
    expect(res.status).toBe(400);
    expect(suffix(res)).toBe('rbac-limit-exceeded');
  });
});

describe('a wildcard below a module', () => {
  it('is refused when a role is written (it would grant nothing when checked)', async () => {
    const res = await p.api('/rbac/roles', {
      token: owner.accessToken,
      body: { name: 'deep wildcard', permissions: ['tally.counters.*'] },
    });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].message).toContain('tally.counters.*');
  });
});

describe('a soft-deleted member', () => {
  it('can be invited again; accepting brings the membership back with exactly the invited roles', async () => {
    await p.api('/rbac/roles', { token: owner.accessToken, body: { name: 'Reader', permissions: ['users.list'] } });
    const member = await addMember(p, owner);
    expect((await p.api(`/users/${member.userId}`, { method: 'DELETE', token: owner.accessToken })).status).toBe(200);
    const before = p.smtp.messages.length;
    const again = await p.api('/auth/invite', {
      token: owner.accessToken,
      body: { email: member.email, roles: ['Reader'] },
    });
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ invite_id: expect.any(String), email: member.email });
    const token = await mailToken(p, member.email, 'invite', before);
    expect(
      (
        await p.api('/auth/accept-invite', {
          body: { token, name: 'Back Again', password: 'correct horse battery staple 42' },
        })
      ).status,
    ).toBe(201);
    expect((await p.api(`/users/${member.userId}`, { token: owner.accessToken })).body).toMatchObject({
      status: 'active',
      roles: ['Reader'],
      deletedAt: null,
    });
  });
});

describe('Sign-In with Ethereum without a signature', () => {
  it('answers 400 validation-error at the callback and when linking, not 401', async () => {
    const start = (await p.api('/auth/login/siwe', { method: 'POST' })).body;
    const callback = await p.api('/auth/callback/siwe', {
      body: { message: `example.test wants you to sign in\nNonce: ${start.nonce}` },
    });
    expect(callback.status).toBe(400);
    expect(suffix(callback)).toBe('validation-error');
    const link = await p.api(`/users/${owner.userId}/providers/siwe`, { token: owner.accessToken, body: {} });
    expect(link.status).toBe(400);
  });
});

describe('the resend limit of request-verify-email', () => {
  it("answers its 429 with its own counters (3 an hour), not the gateway's", async () => {
    const user = await registerUser(p);
    for (let i = 0; i < 3; i += 1) await p.api('/auth/request-verify-email', { token: user.accessToken, body: {} });
    const limited = await p.api('/auth/request-verify-email', { token: user.accessToken, body: {} });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('x-ratelimit-limit')).toBe('3');
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(limited.body.retryAfter).toBeGreaterThan(0);
  });
});

describe('links in mails', () => {
  it('point by default to pages the platform serves, which post the token to the API', async () => {
    const user = await registerUser(p);
    const mail = await p.smtp.waitFor(
      (m) => m.envelope.to.includes(user.email) && m.parsed.headers.get('x-platform-purpose') === 'verify-email',
    );
    const link = /https?:\/\/\S+/.exec(mail.parsed.text ?? '')![0];
    expect(link.startsWith(`${p.kernel.config.rootUrl}/verify-email?token=`)).toBe(true);
    const page = await fetch(link.replace(p.kernel.config.rootUrl, p.url));
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(await page.text()).toContain('/v1/auth/verify-email');
    expect((await fetch(`${p.url}/pages/page.js`)).status).toBe(200);
  });

  it('point to APP_URL when it is set', async () => {
    const custom = await startIdentityPlatform({ env: { APP_URL: 'https://app.example.test/account' } });
    try {
      const user = await registerUser(custom);
      const mail = await custom.smtp.waitFor(
        (m) => m.envelope.to.includes(user.email) && m.parsed.headers.get('x-platform-purpose') === 'verify-email',
      );
      expect(mail.parsed.text).toContain('https://app.example.test/account/verify-email?token=');
    } finally {
      await custom.close();
    }
  });
});
