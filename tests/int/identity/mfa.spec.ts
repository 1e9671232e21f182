import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { totpCode } from '../../../infra/security/totp';
import type { IdentityPlatform, Registered } from '../../support/identity';
import { PASSWORD, registerUser, startIdentityPlatform } from '../../support/identity';

let p: IdentityPlatform;
beforeAll(async () => {
  p = await startIdentityPlatform();
});
afterAll(async () => {
  await p?.close();
});

const now = () => Math.floor(p.clock.now().getTime() / 1000);
/** a fresh code in a new 30 s window, so the replay cache never refuses it */
const nextCode = (secret: string) => {
  p.clock.advance(30_000);
  return totpCode(secret, now());
};

const withMfa = async (): Promise<Registered & { secret: string; codes: string[] }> => {
  const user = await registerUser(p);
  const enable = await p.api('/auth/mfa/enable', { token: user.accessToken, body: {} });
  expect(enable.status).toBe(200);
  const verify = await p.api('/auth/mfa/verify', {
    token: user.accessToken,
    body: { code: totpCode(enable.body.secret, now()) },
  });
  expect(verify.status).toBe(200);
  return { ...user, secret: enable.body.secret, codes: enable.body.recovery_codes };
};

describe('MFA setup', () => {
  it('enable returns secret, otpauth URI, SVG QR and 10 recovery codes; verify turns it on', async () => {
    const user = await registerUser(p);
    const enable = await p.api('/auth/mfa/enable', { token: user.accessToken, body: {} });
    expect(enable.status).toBe(200);
    expect(enable.body.otpauth_uri).toMatch(/^otpauth:\/\/totp\//);
    expect(enable.body.qr_code_svg).toContain('<svg');
    expect(enable.body.recovery_codes).toHaveLength(10);
    expect(enable.body.recovery_codes[0]).toMatch(/^[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}$/);
    const wrong = await p.api('/auth/mfa/verify', { token: user.accessToken, body: { code: '000000' } });
    expect(wrong.status).toBe(401);
    expect(wrong.body.type).toMatch(/\/mfa-invalid$/);
    const verify = await p.api('/auth/mfa/verify', {
      token: user.accessToken,
      body: { code: totpCode(enable.body.secret, now()) },
    });
    expect(verify.body).toEqual({ mfa_enabled: true, recovery_codes_remaining: 10 });
    const me = await p.api('/auth/me', { token: user.accessToken });
    expect(me.body.mfaEnabled).toBe(true);
    const again = await p.api('/auth/mfa/enable', { token: user.accessToken, body: {} });
    expect(again.status).toBe(409);
    expect((await p.api('/auth/recovery-codes', { token: user.accessToken })).body).toEqual({ remaining: 10 });
  });

  it('disable when not enabled is 400 validation-error', async () => {
    const user = await registerUser(p);
    const res = await p.api('/auth/mfa/disable', {
      token: user.accessToken,
      body: { code: '123456', password: PASSWORD },
    });
    expect(res.status).toBe(400);
    expect(res.body.type).toMatch(/\/validation-error$/);
  });

  it('disable needs the password and a code', async () => {
    const user = await withMfa();
    const badPassword = await p.api('/auth/mfa/disable', {
      token: user.accessToken,
      body: { code: nextCode(user.secret), password: 'wrong password here' },
    });
    expect(badPassword.status).toBe(401);
    const ok = await p.api('/auth/mfa/disable', {
      token: user.accessToken,
      body: { code: nextCode(user.secret), password: PASSWORD },
    });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ mfa_enabled: false });
  });
});

describe('an account with MFA on', () => {
  let user: Registered & { secret: string; codes: string[] };
  beforeAll(async () => {
    user = await withMfa();
  });

  it('login without a code answers 401 mfa-required with the challenge members', async () => {
    const res = await p.api('/auth/login', { body: { email: user.email, password: PASSWORD } });
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(res.body).toMatchObject({ mfa_required: true, mfa_type: 'totp', mfa_token: expect.any(String) });
    expect(res.body.type).toMatch(/\/mfa-required$/);
  });

  it('login with a wrong code answers 401 mfa-invalid, with the right one a pair', async () => {
    const wrong = await p.api('/auth/login', { body: { email: user.email, password: PASSWORD, mfaCode: '000000' } });
    expect(wrong.body.type).toMatch(/\/mfa-invalid$/);
    const ok = await p.api('/auth/login', {
      body: { email: user.email, password: PASSWORD, mfaCode: nextCode(user.secret) },
    });
    expect(ok.status).toBe(200);
    expect(ok.body.accessToken).toEqual(expect.any(String));
  });

  it('the challenge completes with {mfa_token, code} as a snake_case pair', async () => {
    const challenge = await p.api('/auth/login', { body: { email: user.email, password: PASSWORD } });
    const res = await p.api('/auth/mfa/verify', {
      body: { mfa_token: challenge.body.mfa_token, code: nextCode(user.secret) },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      token_type: 'Bearer',
      expires_in: 900,
      access_token: expect.any(String),
      refresh_token: expect.any(String),
      user: { id: user.userId, mfa_enabled: true },
    });
  });

  it('an mfa_token expires after 5 minutes', async () => {
    const challenge = await p.api('/auth/login', { body: { email: user.email, password: PASSWORD } });
    p.clock.advance(5 * 60_000 + 1000);
    const res = await p.api('/auth/mfa/verify', {
      body: { mfa_token: challenge.body.mfa_token, code: totpCode(user.secret, now()) },
    });
    expect(res.status).toBe(401);
    expect(res.body.type).toMatch(/\/token-expired$/);
  });

  it('a TOTP code is accepted once, also by 20 concurrent logins (the excess over the per-account bound is 429)', async () => {
    const code = nextCode(user.secret);
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        p.api('/auth/login', { body: { email: user.email, password: PASSWORD, mfaCode: code } }),
      ),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 401 || a.status === 429)).toHaveLength(19);
  });

  it('a recovery code logs in once, also with 20 concurrent copies, and MFA stays on', async () => {
    const code = user.codes[0]!;
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => p.api('/auth/recovery', { body: { email: user.email, recovery_code: code } })),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    const ok = answers.find((a) => a.status === 200)!;
    expect(ok.body.accessToken).toEqual(expect.any(String));
    expect((await p.api('/auth/recovery-codes', { token: ok.body.accessToken })).body).toEqual({ remaining: 9 });
    expect((await p.api('/auth/me', { token: ok.body.accessToken })).body.mfaEnabled).toBe(true);
    await p.smtp.waitFor(
      (m) => m.envelope.to.includes(user.email) && /recovery code was used/i.test(m.parsed.subject ?? ''),
    );
  });

  it('regenerate gives 10 new codes and invalidates the old ones', async () => {
    const res = await p.api('/auth/recovery-codes/regenerate', {
      token: user.accessToken,
      body: { password: PASSWORD, code: nextCode(user.secret) },
    });
    expect(res.status).toBe(200);
    expect(res.body.recovery_codes).toHaveLength(10);
    const old = await p.api('/auth/recovery', { body: { email: user.email, recovery_code: user.codes[1] } });
    expect(old.status).toBe(401);
    user.codes = res.body.recovery_codes;
  });
});

describe('failed recovery attempts', () => {
  it('5 distinct wrong codes in 15 minutes lock recovery (not password login) for an hour and alert the tenant owner; the third lockout locks the account', async () => {
    const user = await withMfa();
    let guess = 0;
    const attempt = () =>
      p.api('/auth/recovery', {
        body: { email: user.email, recovery_code: `AAAA-BBBB-${String(guess++).padStart(4, '0')}` },
      });
    for (let lockout = 1; lockout <= 3; lockout += 1) {
      for (let i = 0; i < 5; i += 1) expect((await attempt()).status).toBe(401);
      const locked = await attempt();
      expect(locked.status).toBe(403);
      expect(locked.body.type).toMatch(/\/account-locked$/);
      expect(
        (await p.api('/auth/recovery', { body: { email: user.email, recovery_code: user.codes[0] } })).status,
      ).toBe(403);
      if (lockout === 1) {
        const holder = await p.api('/auth/login', {
          body: { email: user.email, password: PASSWORD, mfaCode: nextCode(user.secret) },
        });
        expect(holder.status).toBe(200);
        const alert = await p.smtp.waitFor(
          (m) => m.envelope.to.includes(user.email) && m.parsed.headers.get('x-platform-alert') === 'recovery-lockout',
        );
        expect(alert.parsed.text).toContain(user.email);
      }
      p.clock.advance(3600_000 + 1000);
    }
    const login = await p.api('/auth/login', {
      body: { email: user.email, password: PASSWORD, mfaCode: nextCode(user.secret) },
    });
    expect(login.status).toBe(403);
    expect(login.body.type).toMatch(/\/account-locked$/);
    const me = await p.api('/auth/me', { token: user.accessToken });
    expect(me.status).toBe(401);
  });
});
