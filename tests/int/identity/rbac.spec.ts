import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlatformOwner } from '../../../commands/identity/account';
import type { IdentityPlatform, Registered } from '../../support/identity';
import { addMember, PASSWORD, registerUser, startIdentityPlatform, uniqueEmail } from '../../support/identity';

let p: IdentityPlatform;
let a: Registered;
let b: Registered;
let bRole: string;
let bUser: string;
beforeAll(async () => {
  p = await startIdentityPlatform();
  a = await registerUser(p);
  b = await registerUser(p);
  bRole = (await p.api('/rbac/roles', { token: b.accessToken, body: { name: 'B role', permissions: ['users.list'] } }))
    .body.id;
  bUser = (await addMember(p, b)).userId;
});
afterAll(async () => {
  await p?.close();
});

describe('users of a tenant', () => {
  it('invite (POST /users), accept, get with permissions, patch, soft delete (login blocked), list without and with include_deleted, restore', async () => {
    const role = await p.api('/rbac/roles', {
      token: a.accessToken,
      body: { name: 'Support', description: 'help desk', permissions: ['users.list', 'roles.*'] },
    });
    expect(role.status).toBe(201);
    const email = uniqueEmail();
    const created = await addMember(p, a, { email, roles: ['Support'], name: 'Alan Kay' });
    const id = created.userId;
    expect((await p.api(`/users/${id}`, { token: a.accessToken })).body).toMatchObject({
      email,
      firstName: 'Alan',
      roles: ['Support'],
      status: 'active',
      deletedAt: null,
      tenantId: a.tenantId,
    });
    const got = await p.api(`/users/${id}`, { token: a.accessToken });
    expect(got.body.permissions).toEqual(['roles.*', 'users.list']);
    const perms = await p.api(`/rbac/users/${id}/permissions`, { token: a.accessToken });
    expect(perms.body).toEqual({ userId: id, roles: ['Support'], permissions: ['roles.*', 'users.list'] });
    const patched = await p.api(`/users/${id}`, {
      method: 'PATCH',
      token: a.accessToken,
      body: { lastName: 'Turing' },
    });
    expect(patched.body.lastName).toBe('Turing');
    const deleted = await p.api(`/users/${id}`, { method: 'DELETE', token: a.accessToken });
    expect(deleted.status).toBe(200);
    expect(deleted.body.status).toBe('pending_deletion');
    expect(deleted.body.deletedAt).toEqual(expect.any(String));
    expect((await p.api('/auth/login', { body: { email, password: PASSWORD } })).status).toBe(401);
    const list = await p.api('/users', { token: a.accessToken });
    expect(list.body.data.map((u: { id: string }) => u.id)).not.toContain(id);
    const all = await p.api('/users?include_deleted=true', { token: a.accessToken });
    expect(all.body.data.map((u: { id: string }) => u.id)).toContain(id);
    const restored = await p.api(`/users/${id}/restore`, { method: 'PATCH', token: a.accessToken });
    expect(restored.body.status).toBe('active');
    expect((await p.api('/auth/login', { body: { email, password: PASSWORD } })).status).toBe(200);
  });

  it('paginates with next_page_token', async () => {
    for (let i = 0; i < 3; i += 1) await addMember(p, a);
    const first = await p.api('/users?page_size=2', { token: a.accessToken });
    expect(first.body.data).toHaveLength(2);
    const second = await p.api(`/users?page_size=2&page_token=${first.body.next_page_token}`, { token: a.accessToken });
    expect(second.body.data[0].id > first.body.data[1].id).toBe(true);
  });

  it('adding an existing member answers 202 without a body, like an invitation (spec 000)', async () => {
    const res = await p.api('/users', { token: a.accessToken, body: { email: a.email } });
    expect(res.status).toBe(202);
    expect(res.body).toBeNull();
  });
});

describe('roles', () => {
  it('CRUD, assign and revoke; the Owner role cannot be deleted', async () => {
    const created = await p.api('/rbac/roles', {
      token: a.accessToken,
      body: { name: 'Auditor', description: 'reads', permissions: ['users.list'] },
    });
    expect(created.body).toMatchObject({
      name: 'Auditor',
      description: 'reads',
      permissions: ['users.list'],
      tenantId: a.tenantId,
      createdBy: a.userId,
    });
    const id = created.body.id;
    expect((await p.api(`/rbac/roles/${id}`, { token: a.accessToken })).body.permissions).toEqual(['users.list']);
    const put = await p.api(`/rbac/roles/${id}`, {
      method: 'PUT',
      token: a.accessToken,
      body: { permissions: ['users.list', 'roles.list'] },
    });
    expect(put.body.permissions).toEqual(['roles.list', 'users.list']);
    const user = await addMember(p, a);
    const assigned = await p.api(`/rbac/roles/${id}/assign`, { token: a.accessToken, body: { user_id: user.userId } });
    expect(assigned.body.roles).toEqual(['Auditor', 'Member']);
    const { rows } = await p.kernel.db.query(
      "SELECT 1 FROM es.events WHERE type = 'auth.role.changed' AND data->>'userId' = $1",
      [user.userId],
    );
    expect(rows).toHaveLength(1);
    const revoked = await p.api(`/rbac/roles/${id}/revoke`, { token: a.accessToken, body: { user_id: user.userId } });
    expect(revoked.body.roles).toEqual(['Member']);
    expect((await p.api(`/rbac/roles/${id}`, { method: 'DELETE', token: a.accessToken })).status).toBe(204);
    expect((await p.api(`/rbac/roles/${id}`, { token: a.accessToken })).status).toBe(404);
    const roles = await p.api('/rbac/roles', { token: a.accessToken });
    const owner = roles.body.data.find((r: { name: string }) => r.name === 'Owner');
    const refused = await p.api(`/rbac/roles/${owner.id}`, { method: 'DELETE', token: a.accessToken });
    expect(refused.status).toBe(400);
  });

  it('refuse unknown and reserved permissions and more than 1,000 permissions (rbac-limit-exceeded)', async () => {
    expect(
      (await p.api('/rbac/roles', { token: a.accessToken, body: { name: 'x1', permissions: ['platform.*'] } })).status,
    ).toBe(400);
    expect(
      (await p.api('/rbac/roles', { token: a.accessToken, body: { name: 'x2', permissions: ['nope.read'] } })).status,
    ).toBe(400);
    const many = Array.from({ length: 1001 }, (_, i) => `users.p${i}`);
    const res = await p.api('/rbac/roles', { token: a.accessToken, body: { name: 'x3', permissions: many } });
    expect(res.status).toBe(400);
    expect(res.body.type).toMatch(/\/rbac-limit-exceeded$/);
  });

  it('list the registered permissions', async () => {
    const res = await p.api('/rbac/permissions', { token: a.accessToken });
    expect(res.body.data.map((x: { key: string }) => x.key)).toEqual(
      expect.arrayContaining(['users.create', 'roles.assign', 'users.impersonate']),
    );
  });

  it('a role change takes effect on the next request (permission cache invalidated)', async () => {
    const role = await p.api('/rbac/roles', {
      token: a.accessToken,
      body: { name: 'Lister', permissions: ['users.list'] },
    });
    const user = await addMember(p, a);
    const login = await p.api('/auth/login', { body: { email: user.email, password: PASSWORD } });
    expect((await p.api('/users', { token: login.body.accessToken })).status).toBe(403);
    await p.api(`/rbac/roles/${role.body.id}/assign`, { token: a.accessToken, body: { user_id: user.userId } });
    expect((await p.api('/users', { token: login.body.accessToken })).status).toBe(200);
  });
});

describe('tenant isolation', () => {
  it('a user of tenant A gets 404 for every id of tenant B on every identity route', async () => {
    const t = a.accessToken;
    const calls: [string, string, unknown?][] = [
      ['GET', `/users/${bUser}`],
      ['PATCH', `/users/${bUser}`, { firstName: 'x' }],
      ['DELETE', `/users/${bUser}`],
      ['PATCH', `/users/${bUser}/restore`],
      ['GET', `/users/${bUser}/providers`],
      ['GET', `/rbac/users/${bUser}/permissions`],
      ['GET', `/rbac/roles/${bRole}`],
      ['PUT', `/rbac/roles/${bRole}`, { permissions: [] }],
      ['DELETE', `/rbac/roles/${bRole}`],
      ['POST', `/rbac/roles/${bRole}/assign`, { user_id: a.userId }],
      ['POST', `/rbac/roles/${bRole}/revoke`, { user_id: a.userId }],
      ['POST', `/auth/invite`, { email: uniqueEmail(), role_id: bRole }],
      ['POST', '/auth/switch-tenant', { tenantId: b.tenantId }],
    ];
    for (const [method, path, body] of calls) {
      const res = await p.api(path, { method, token: t, body });
      expect([path, method, res.status]).toEqual([path, method, 404]);
    }
    const aRole = (await p.api('/rbac/roles', { token: t })).body.data[0].id;
    const assignForeign = await p.api(`/rbac/roles/${aRole}/assign`, { token: t, body: { user_id: bUser } });
    expect(assignForeign.status).toBe(404);
    expect(
      (await p.api('/users?include_deleted=true', { token: t })).body.data.map((u: { id: string }) => u.id),
    ).not.toContain(bUser);
  });
});

describe('impersonation', () => {
  it('only the platform owner may; the token lasts 1 hour, carries act, and the audit event is recorded', async () => {
    expect(
      (await p.api('/auth/impersonate', { token: a.accessToken, body: { tenantId: b.tenantId, reason: 'support' } }))
        .status,
    ).toBe(403);
    const ownerEmail = uniqueEmail('root');
    await createPlatformOwner(p.kernel, { email: ownerEmail, password: PASSWORD });
    const login = await p.api('/auth/login', { body: { email: ownerEmail, password: PASSWORD } });
    expect(login.status).toBe(200);
    const missingReason = await p.api('/auth/impersonate', {
      token: login.body.accessToken,
      body: { tenantId: b.tenantId },
    });
    expect(missingReason.status).toBe(400);
    const res = await p.api('/auth/impersonate', {
      token: login.body.accessToken,
      body: { tenantId: b.tenantId, reason: 'ticket 42', note: 'checking settings' },
    });
    expect(res.status).toBe(200);
    const claims = JSON.parse(Buffer.from(res.body.accessToken.split('.')[1], 'base64url').toString());
    expect(claims).toMatchObject({ sub: b.userId, tenantId: b.tenantId, act: { sub: expect.any(String) } });
    expect(claims.exp - claims.iat).toBe(3600);
    const me = await p.api('/auth/me', { token: res.body.accessToken });
    expect(me.body).toMatchObject({ id: b.userId, impersonatorId: claims.act.sub });
    const { rows } = await p.kernel.db.query<{ data: { reason: string } }>(
      "SELECT data FROM es.events WHERE type = 'auth.impersonation.started' AND tenant_id = $1",
      [b.tenantId],
    );
    expect(rows[0]?.data.reason).toBe('ticket 42');
    expect(
      (
        await p.api('/auth/impersonate', {
          token: login.body.accessToken,
          body: { tenantId: '0190f0f0-0000-7000-8000-000000000000', reason: 'x' },
        })
      ).status,
    ).toBe(404);
  });
});
