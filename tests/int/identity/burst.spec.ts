import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { totpCode } from '../../../infra/security/totp';
import type { IdentityPlatform, Registered } from '../../support/identity';
import { PASSWORD, registerUser, startIdentityPlatform } from '../../support/identity';

/**
 * Found from outside: 20-40 parallel calls of one user to the argon2-verifying endpoints held a
 * database connection each across the hash and exhausted the pool; other tenants' requests waited
 * 10 s and got 500. A small pool makes the old behaviour fail at once.
 */
let p: IdentityPlatform;
beforeAll(async () => {
  p = await startIdentityPlatform({ env: { DATABASE_POOL_SIZE: '4', DATABASE_POOL_WAIT_MS: '3000' } });
});
afterAll(async () => {
  await p?.close();
});

const now = () => Math.floor(p.clock.now().getTime() / 1000);
const timed = async <T>(call: () => Promise<T>) => {
  const started = performance.now();
  const result = await call();
  return { result, ms: performance.now() - started };
};

describe('one user bursting 40 parallel argon2-heavy calls', () => {
  let burster: Registered & { secret: string };
  let bystander: Registered;
  beforeAll(async () => {
    burster = { ...(await registerUser(p)), secret: '' };
    const enable = await p.api('/auth/mfa/enable', { token: burster.accessToken, body: {} });
    burster.secret = enable.body.secret;
    expect(
      (await p.api('/auth/mfa/verify', { token: burster.accessToken, body: { code: totpCode(burster.secret, now()) } }))
        .status,
    ).toBe(200);
    bystander = await registerUser(p);
  });

  it("another tenant's requests keep answering within their normal latency, and nobody gets a 500", async () => {
    const normal = [];
    for (let i = 0; i < 10; i += 1)
      normal.push((await timed(() => p.api('/auth/me', { token: bystander.accessToken }))).ms);
    const baseline = Math.max(...normal);

    p.clock.advance(30_000);
    const code = totpCode(burster.secret, now());
    const burst = Promise.all([
      ...Array.from({ length: 20 }, () =>
        p.api('/auth/recovery-codes/regenerate', { token: burster.accessToken, body: { password: PASSWORD, code } }),
      ),
      ...Array.from({ length: 20 }, () =>
        p.api('/auth/mfa/disable', {
          token: burster.accessToken,
          body: { password: 'a wrong password, argon2 all the same', code },
        }),
      ),
    ]);
    const during = [];
    for (let i = 0; i < 10; i += 1) during.push(await timed(() => p.api('/auth/me', { token: bystander.accessToken })));
    const answers = await burst;

    expect(during.map((d) => d.result.status)).toEqual(Array(10).fill(200));
    expect(Math.max(...during.map((d) => d.ms))).toBeLessThan(Math.max(250, baseline * 10));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    // the excess over the per-account bound is refused at once as 429, with Retry-After
    const limited = answers.filter((a) => a.status === 429);
    expect(limited.length).toBeGreaterThan(20);
    expect(limited.every((a) => Number(a.headers.get('retry-after')) >= 1)).toBe(true);
  });
});
