import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixedTestClock } from '../../support/clock';
import type { IdentityPlatform, Registered } from '../../support/identity';
import { addMember, mailToken, PASSWORD, registerUser, startIdentityPlatform } from '../../support/identity';

/*
 * Sessions end when they must (issue 22): a password reset, a lock or a deletion ends every session
 * started before it — the access tokens already handed out (15 minutes, stateless by the spec)
 * included — on the very next request, in every process; a session started after it works. The
 * clock stands still for the whole file: every token here, before and after the change, carries
 * the same iat, so a rule comparing issue times in seconds could not tell them apart. In the split
 * run the change is made by write-api and the next request is checked by the gateway.
 */
let p: IdentityPlatform;
beforeAll(async () => {
  p = await startIdentityPlatform({ clock: fixedTestClock(new Date()) });
});
afterAll(async () => {
  await p?.close();
});

const NEW_PASSWORD = 'a brand new passphrase 77';

/** a password login into the account's only tenant: its access and refresh tokens */
const signIn = async (email: string, password = PASSWORD) => {
  const res = await p.api('/auth/login', { body: { email, password } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { accessToken: res.body.accessToken as string, refreshToken: res.body.refreshToken as string };
};

const me = (token: string) => p.api('/auth/me', { token });

const expectEnded = async (token: string) => {
  const res = await me(token);
  expect(res.status).toBe(401);
  expect(res.body.type).toMatch(/\/unauthorized$/);
};

const resetPassword = async (user: Registered) => {
  const before = p.smtp.messages.length;
  expect((await p.api('/auth/request-reset', { body: { email: user.email } })).status).toBe(202);
  const token = await mailToken(p, user.email, 'reset', before);
  expect((await p.api('/auth/reset-password', { body: { token, password: NEW_PASSWORD } })).status).toBe(200);
};

const setStatus = async (owner: Registered, userId: string, status: 'locked' | 'active') =>
  expect(
    (await p.api(`/users/${userId}`, { method: 'PATCH', token: owner.accessToken, body: { status } })).status,
  ).toBe(200);

describe('an account whose password is reset', () => {
  it('has every session started before the reset ended on the next request: access tokens 401, refresh tokens 401', async () => {
    const user = await registerUser(p);
    const other = await signIn(user.email);
    expect((await me(user.accessToken)).status).toBe(200);
    expect((await me(other.accessToken)).status).toBe(200);

    await resetPassword(user);

    await expectEnded(user.accessToken);
    await expectEnded(other.accessToken);
    for (const refreshToken of [user.refreshToken, other.refreshToken])
      expect((await p.api('/auth/refresh', { body: { refreshToken } })).status).toBe(401);
  });

  it('keeps a session started after the reset, in the same second: its token and its refresh work', async () => {
    const user = await registerUser(p);
    await resetPassword(user);
    const after = await signIn(user.email, NEW_PASSWORD);
    expect((await me(after.accessToken)).status).toBe(200);
    const renewed = await p.api('/auth/refresh', { body: { refreshToken: after.refreshToken } });
    expect(renewed.status).toBe(200);
    expect((await me(renewed.body.accessToken)).status).toBe(200);
    await expectEnded(user.accessToken);
  });
});

describe('a member whose membership is locked by the tenant', () => {
  it('stays signed out once unlocked: the tokens from before the lock are refused, a new login works', async () => {
    const owner = await registerUser(p);
    const member = await addMember(p, owner);
    expect((await me(member.accessToken)).status).toBe(200);

    await setStatus(owner, member.userId, 'locked');
    await expectEnded(member.accessToken);
    const whileLocked = await p.api('/auth/refresh', { body: { refreshToken: member.refreshToken } });
    expect(whileLocked.status).toBe(403);
    expect(whileLocked.body.type).toMatch(/\/account-locked$/);

    await setStatus(owner, member.userId, 'active');
    await expectEnded(member.accessToken);
    const afterUnlock = await p.api('/auth/refresh', { body: { refreshToken: member.refreshToken } });
    expect(afterUnlock.status).toBe(401);
    expect(afterUnlock.body.type).toMatch(/\/unauthorized$/);

    const fresh = await signIn(member.email);
    expect((await me(fresh.accessToken)).status).toBe(200);
    expect((await p.api('/auth/refresh', { body: { refreshToken: fresh.refreshToken } })).status).toBe(200);
  });

  it("leaves the member's sessions in its other tenants alone", async () => {
    const owner = await registerUser(p);
    const elsewhere = await registerUser(p);
    const member = await addMember(p, owner, { email: elsewhere.email });
    await setStatus(owner, member.userId, 'locked');
    await expectEnded(member.accessToken);
    expect((await me(elsewhere.accessToken)).status).toBe(200);
  });
});

describe('a member deleted and then restored', () => {
  it('is not let back in with the tokens from before the deletion; a new login works', async () => {
    const owner = await registerUser(p);
    const member = await addMember(p, owner);
    expect((await p.api(`/users/${member.userId}`, { method: 'DELETE', token: owner.accessToken })).status).toBe(200);
    await expectEnded(member.accessToken);
    expect((await p.api(`/users/${member.userId}/restore`, { method: 'PATCH', token: owner.accessToken })).status).toBe(
      200,
    );
    await expectEnded(member.accessToken);
    expect((await p.api('/auth/refresh', { body: { refreshToken: member.refreshToken } })).status).toBe(401);
    const fresh = await signIn(member.email);
    expect((await me(fresh.accessToken)).status).toBe(200);
  });
});
