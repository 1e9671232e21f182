import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IdentityPlatform, Registered } from '../../support/identity';
import {
  addMember,
  mailToken,
  PASSWORD,
  registerUser,
  startIdentityPlatform,
  uniqueEmail,
} from '../../support/identity';

/*
 * A change of access takes effect on the very next request (DESIGN.md mechanism 8). In the split
 * run the change is made by write-api and the next request is checked by the gateway: two
 * processes, each with its own access cache.
 */
let p: IdentityPlatform;
beforeAll(async () => {
  p = await startIdentityPlatform({ services: ['identity', 'money'] });
});
afterAll(async () => {
  await p?.close();
});

const idempotent = () => ({ 'idempotency-key': randomUUID() });

const signIn = async (email: string) => {
  const res = await p.api('/auth/login', { body: { email, password: PASSWORD } });
  expect(res.status).toBe(200);
  return res.body.accessToken as string;
};

/** a member of the owner's tenant holding one role with these permissions */
const memberWith = async (owner: Registered, permissions: string[]) => {
  const role = await p.api('/rbac/roles', {
    token: owner.accessToken,
    body: { name: `role ${uniqueEmail()}`, permissions },
  });
  const member = await addMember(p, owner, { role_ids: [role.body.id] });
  return {
    roleId: role.body.id as string,
    userId: member.userId,
    email: member.email,
    token: await signIn(member.email),
  };
};

describe('a user whose email is not verified yet', () => {
  it('may transfer on the request right after verify-email (not 403 EMAIL_NOT_VERIFIED)', async () => {
    const user = await registerUser(p);
    const open = async (userId: string) =>
      (await p.api('/wallets', { token: user.accessToken, body: { userId, currency: 'USD' }, headers: idempotent() }))
        .body.id as string;
    const [from, to] = [await open(user.userId), await open((await addMember(p, user)).userId)];
    expect(
      (
        await p.api(`/wallets/${from}/credit`, {
          token: user.accessToken,
          body: { amount: 100, currency: 'USD' },
          headers: idempotent(),
        })
      ).status,
    ).toBe(200);
    const transfer = () =>
      p.api('/transfers', {
        token: user.accessToken,
        body: { fromWalletId: from, toWalletId: to, amount: 1, currency: 'USD' },
        headers: idempotent(),
      });
    // given: refused while unverified (and the refusal's access is now cached wherever it was checked)
    const refused = await transfer();
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('EMAIL_NOT_VERIFIED');
    // when
    expect(
      (await p.api('/auth/verify-email', { body: { token: await mailToken(p, user.email, 'verify-email') } })).status,
    ).toBe(200);
    // then
    const next = await transfer();
    expect(next.status, JSON.stringify(next.body)).toBe(200);
  });
});

describe('a member whose access changes', () => {
  let owner: Registered;
  beforeAll(async () => {
    owner = await registerUser(p);
  });

  it('gets 403 on the request right after a role is revoked', async () => {
    const member = await memberWith(owner, ['users.list']);
    expect((await p.api('/users', { token: member.token })).status).toBe(200);
    expect(
      (
        await p.api(`/rbac/roles/${member.roleId}/revoke`, {
          token: owner.accessToken,
          body: { user_id: member.userId },
        })
      ).status,
    ).toBe(200);
    expect((await p.api('/users', { token: member.token })).status).toBe(403);
  });

  it("gets 403 on the request right after the role's permissions are changed, and 200 right after they are given back", async () => {
    const member = await memberWith(owner, ['users.list']);
    expect((await p.api('/users', { token: member.token })).status).toBe(200);
    expect(
      (
        await p.api(`/rbac/roles/${member.roleId}`, {
          method: 'PUT',
          token: owner.accessToken,
          body: { permissions: ['roles.list'] },
        })
      ).status,
    ).toBe(200);
    expect((await p.api('/users', { token: member.token })).status).toBe(403);
    expect(
      (
        await p.api(`/rbac/roles/${member.roleId}`, {
          method: 'PUT',
          token: owner.accessToken,
          body: { permissions: ['users.list'] },
        })
      ).status,
    ).toBe(200);
    expect((await p.api('/users', { token: member.token })).status).toBe(200);
  });

  it('gets 401 on the request right after being locked or deleted, and back in with a new login right after a restore', async () => {
    const locked = await memberWith(owner, ['users.list']);
    expect((await p.api('/users', { token: locked.token })).status).toBe(200);
    expect(
      (
        await p.api(`/users/${locked.userId}`, {
          method: 'PATCH',
          token: owner.accessToken,
          body: { status: 'locked' },
        })
      ).status,
    ).toBe(200);
    expect((await p.api('/users', { token: locked.token })).status).toBe(401);

    const deleted = await memberWith(owner, ['users.list']);
    expect((await p.api('/users', { token: deleted.token })).status).toBe(200);
    expect((await p.api(`/users/${deleted.userId}`, { method: 'DELETE', token: owner.accessToken })).status).toBe(200);
    expect((await p.api('/users', { token: deleted.token })).status).toBe(401);
    expect(
      (await p.api(`/users/${deleted.userId}/restore`, { method: 'PATCH', token: owner.accessToken })).status,
    ).toBe(200);
    // the deletion ended the sessions it found (tests/int/identity/sessions.spec.ts); a new one starts at once
    expect((await p.api('/users', { token: deleted.token })).status).toBe(401);
    expect((await p.api('/users', { token: await signIn(deleted.email) })).status).toBe(200);
  });
});
