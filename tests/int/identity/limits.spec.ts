import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlatformOwner } from '../../../commands/identity/account';
import { totpCode } from '../../../infra/security/totp';
import type { IdentityPlatform } from '../../support/identity';
import { PASSWORD, registerUser, startIdentityPlatform, uniqueEmail } from '../../support/identity';

let p: IdentityPlatform;
beforeAll(async () => {
  p = await startIdentityPlatform();
});
afterAll(async () => {
  await p?.close();
});

describe('the roles-per-tenant limit', () => {
  it('given a tenant with 500 roles (Owner and 499 more), when a 501st is created, then 400 rbac-limit-exceeded', async () => {
    const owner = await registerUser(p);
    let next = 0;
    const statuses: number[] = [];
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < 499) {
          const i = (next += 1);
          statuses.push(
            (
              await p.api('/rbac/roles', {
                token: owner.accessToken,
                body: { name: `role ${i}`, permissions: ['users.list'] },
              })
            ).status,
          );
        }
      }),
    );
    expect(statuses.filter((s) => s === 201)).toHaveLength(499);
    const count = await p.api('/rbac/roles?page_size=100', { token: owner.accessToken });
    expect(count.body.next_page_token).toEqual(expect.any(String));
    const refused = await p.api('/rbac/roles', {
      token: owner.accessToken,
      body: { name: 'one too many', permissions: ['users.list'] },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.type).toMatch(/\/rbac-limit-exceeded$/);
    // another tenant is not affected
    const other = await registerUser(p);
    expect(
      (
        await p.api('/rbac/roles', {
          token: other.accessToken,
          body: { name: 'one too many', permissions: ['users.list'] },
        })
      ).status,
    ).toBe(201);
  });
});

describe('the third recovery lockout', () => {
  it('given a platform owner, when failed recovery attempts lock an account a third time, then the platform owner gets an alert mail', async () => {
    const platformOwner = uniqueEmail('root');
    await createPlatformOwner(p.kernel, { email: platformOwner, password: PASSWORD });
    const user = await registerUser(p);
    const now = () => Math.floor(p.clock.now().getTime() / 1000);
    const enable = await p.api('/auth/mfa/enable', { token: user.accessToken, body: {} });
    expect(
      (
        await p.api('/auth/mfa/verify', {
          token: user.accessToken,
          body: { code: totpCode(enable.body.secret, now()) },
        })
      ).status,
    ).toBe(200);
    let guess = 0;
    const attempt = () =>
      p.api('/auth/recovery', {
        body: { email: user.email, recovery_code: `AAAA-BBBB-${String(guess++).padStart(4, '0')}` },
      });
    const before = p.smtp.messages.length;
    try {
      for (let lockout = 1; lockout <= 3; lockout += 1) {
        for (let i = 0; i < 5; i += 1) expect((await attempt()).status).toBe(401);
        expect((await attempt()).status).toBe(403);
        if (lockout < 3) {
          // the first two lockouts alert the tenant owner only
          await p.smtp.waitFor(
            (m) =>
              p.smtp.messages.indexOf(m) >= before &&
              m.envelope.to.includes(user.email) &&
              m.parsed.headers.get('x-platform-alert') === 'recovery-lockout',
          );
          expect(p.smtp.messages.some((m) => m.envelope.to.includes(platformOwner))).toBe(false);
        }
        p.clock.advance(3600_000 + 1000);
      }
      const alert = await p.smtp.waitFor(
        (m) => m.envelope.to.includes(platformOwner) && m.parsed.headers.get('x-platform-alert') === 'account-locked',
      );
      expect(alert.parsed.text).toContain(user.email);
      expect(alert.parsed.text).toContain(user.userId);
      expect(p.smtp.messages.filter((m) => m.envelope.to.includes(platformOwner))).toHaveLength(1);
      const login = await p.api('/auth/login', { body: { email: user.email, password: PASSWORD } });
      expect(login.status).toBe(403);
      expect(login.body.type).toMatch(/\/account-locked$/);
    } finally {
      p.clock.reset();
    }
  });
});
