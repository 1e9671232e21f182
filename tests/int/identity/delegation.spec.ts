import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IdentityPlatform, Member, Registered } from '../../support/identity';
import { addMember, registerUser, startIdentityPlatform, uniqueEmail } from '../../support/identity';

/**
 * Nobody grants what they do not hold (DESIGN.md mechanism 9). Found from outside: a user holding
 * only roles.create and roles.assign created a role with users.delete and money.wallets.write and
 * assigned itself the Owner role; one holding users.create created an Owner; one holding
 * roles.update widened its own role to users.*, roles.*, money.*.
 */
let p: IdentityPlatform;
beforeAll(async () => {
  p = await startIdentityPlatform();
});
afterAll(async () => {
  await p?.close();
});

const suffix = (res: { body: { type?: string } }) =>
  String(res.body?.type ?? '')
    .split('/')
    .pop();
const roleId = async (owner: Registered, name: string) =>
  (await p.api('/rbac/roles?page_size=100', { token: owner.accessToken })).body.data.find(
    (r: { name: string }) => r.name === name,
  ).id as string;
const withRole = async (owner: Registered, name: string, permissions: string[]): Promise<Member> => {
  const created = await p.api('/rbac/roles', { token: owner.accessToken, body: { name, permissions } });
  expect(created.status).toBe(201);
  return addMember(p, owner, { roles: [name] });
};

describe('given a role manager holding roles.create, roles.assign, roles.update and users.create only', () => {
  let owner: Registered;
  let manager: Member;
  let colleague: Member;
  beforeAll(async () => {
    owner = await registerUser(p);
    manager = await withRole(owner, 'Manager', ['roles.create', 'roles.assign', 'roles.update', 'users.create']);
    colleague = await addMember(p, owner);
  });

  it("creating a role with users.delete and another module's write permission answers 403 insufficient-role", async () => {
    // (this platform runs identity and the sample tally module; money.wallets.write is the same case in money)
    const res = await p.api('/rbac/roles', {
      token: manager.accessToken,
      body: { name: 'Escalate', permissions: ['users.delete', 'tally.counters.write'] },
    });
    expect(res.status).toBe(403);
    expect(suffix(res)).toBe('insufficient-role');
  });

  it('creating a role within what it holds works', async () => {
    expect(
      (
        await p.api('/rbac/roles', {
          token: manager.accessToken,
          body: { name: 'Helper', permissions: ['roles.create'] },
        })
      ).status,
    ).toBe(201);
  });

  it('assigning itself the Owner role answers 403 self-delegation; giving it to someone else 403 insufficient-role', async () => {
    const owners = await roleId(owner, 'Owner');
    const self = await p.api(`/rbac/roles/${owners}/assign`, {
      token: manager.accessToken,
      body: { user_id: manager.userId },
    });
    expect(self.status).toBe(403);
    expect(suffix(self)).toBe('self-delegation');
    const other = await p.api(`/rbac/roles/${owners}/assign`, {
      token: manager.accessToken,
      body: { user_id: colleague.userId },
    });
    expect(other.status).toBe(403);
    expect(suffix(other)).toBe('insufficient-role');
  });

  it('assigning a role whose permissions it does not hold answers 403; one it holds works', async () => {
    await p.api('/rbac/roles', { token: owner.accessToken, body: { name: 'Deleter', permissions: ['users.delete'] } });
    const refused = await p.api(`/rbac/roles/${await roleId(owner, 'Deleter')}/assign`, {
      token: manager.accessToken,
      body: { user_id: colleague.userId },
    });
    expect(refused.status).toBe(403);
    expect(suffix(refused)).toBe('insufficient-role');
    const allowed = await p.api(`/rbac/roles/${await roleId(owner, 'Helper')}/assign`, {
      token: manager.accessToken,
      body: { user_id: colleague.userId },
    });
    expect(allowed.status).toBe(200);
  });

  it('widening its own role answers 403 insufficient-role and leaves the role as it was', async () => {
    const own = await roleId(owner, 'Manager');
    const res = await p.api(`/rbac/roles/${own}`, {
      method: 'PUT',
      token: manager.accessToken,
      body: { permissions: ['users.*', 'roles.*', 'tally.*'] },
    });
    expect(res.status).toBe(403);
    expect((await p.api(`/rbac/roles/${own}`, { token: owner.accessToken })).body.permissions).toEqual([
      'roles.assign',
      'roles.create',
      'roles.update',
      'users.create',
    ]);
  });

  it('inviting someone as Owner (POST /users or /auth/invite) answers 403 insufficient-role', async () => {
    for (const path of ['/users', '/auth/invite']) {
      const res = await p.api(path, { token: manager.accessToken, body: { email: uniqueEmail(), roles: ['Owner'] } });
      expect([path, res.status, suffix(res)]).toEqual([path, 403, 'insufficient-role']);
    }
    const deleter = await p.api('/users', {
      token: manager.accessToken,
      body: { email: uniqueEmail(), roles: ['Deleter'] },
    });
    expect(deleter.status).toBe(403);
  });
});

describe('the one wildcard rule, at write and at check', () => {
  it('refuses a deeper wildcard (money.wallets.*) and a wildcard under a key (users.create.*); accepts {module}.*', async () => {
    const owner = await registerUser(p);
    for (const permission of ['money.wallets.*', 'users.create.*']) {
      const res = await p.api('/rbac/roles', {
        token: owner.accessToken,
        body: { name: `w-${permission}`, permissions: [permission] },
      });
      expect([permission, res.status]).toEqual([permission, 400]);
    }
    expect(
      (await p.api('/rbac/roles', { token: owner.accessToken, body: { name: 'all users', permissions: ['users.*'] } }))
        .status,
    ).toBe(201);
  });
});

describe('users.impersonate', () => {
  it('is not held by a tenant Owner, not shown in the Owner role and cannot be put into a tenant role', async () => {
    const owner = await registerUser(p);
    expect((await p.api('/auth/me', { token: owner.accessToken })).body.permissions).not.toContain('users.impersonate');
    const ownerRole = (await p.api(`/rbac/roles/${await roleId(owner, 'Owner')}`, { token: owner.accessToken })).body;
    expect(ownerRole.permissions).toContain('users.create');
    expect(ownerRole.permissions).not.toContain('users.impersonate');
    const res = await p.api('/rbac/roles', {
      token: owner.accessToken,
      body: { name: 'Impersonators', permissions: ['users.impersonate'] },
    });
    expect(res.status).toBe(400);
    expect(
      (await p.api('/auth/impersonate', { token: owner.accessToken, body: { tenantId: owner.tenantId, reason: 'x' } }))
        .status,
    ).toBe(403);
  });
});

describe('a tenant always keeps an active Owner', () => {
  it('given a sole Owner, revoking its Owner role, locking, or deleting it answers 409 last-owner', async () => {
    const owner = await registerUser(p);
    const owners = await roleId(owner, 'Owner');
    const attempts = [
      await p.api(`/rbac/roles/${owners}/revoke`, { token: owner.accessToken, body: { user_id: owner.userId } }),
      await p.api(`/users/${owner.userId}`, { method: 'PATCH', token: owner.accessToken, body: { status: 'locked' } }),
      await p.api(`/users/${owner.userId}`, { method: 'DELETE', token: owner.accessToken }),
    ];
    expect(attempts.map((r) => [r.status, suffix(r)])).toEqual([
      [409, 'last-owner'],
      [409, 'last-owner'],
      [409, 'last-owner'],
    ]);
    expect((await p.api('/auth/me', { token: owner.accessToken })).body.roles).toEqual(['Owner']);
  });

  it('given two Owners, one may leave; then the other is the last', async () => {
    const first = await registerUser(p);
    const second = await addMember(p, first, { roles: ['Owner'] });
    const owners = await roleId(first, 'Owner');
    expect(
      (await p.api(`/rbac/roles/${owners}/revoke`, { token: first.accessToken, body: { user_id: first.userId } }))
        .status,
    ).toBe(200);
    const last = await p.api(`/rbac/roles/${owners}/revoke`, {
      token: second.accessToken,
      body: { user_id: second.userId },
    });
    expect(last.status).toBe(409);
  });

  it('given two Owners removing each other at the same moment, exactly one succeeds', async () => {
    const first = await registerUser(p);
    const second = await addMember(p, first, { roles: ['Owner'] });
    const owners = await roleId(first, 'Owner');
    const answers = await Promise.all([
      p.api(`/rbac/roles/${owners}/revoke`, { token: first.accessToken, body: { user_id: second.userId } }),
      p.api(`/rbac/roles/${owners}/revoke`, { token: second.accessToken, body: { user_id: first.userId } }),
    ]);
    // the loser is refused by the last-owner rule, or already lacks roles.assign when its request is checked
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 409 || a.status === 403)).toHaveLength(1);
    const remaining = (
      await p.api('/users', { token: answers[0].status === 200 ? first.accessToken : second.accessToken })
    ).body.data.filter((u: { roles: string[]; status: string }) => u.roles.includes('Owner') && u.status === 'active');
    expect(remaining).toHaveLength(1);
  });
});
