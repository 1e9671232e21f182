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

/**
 * Accounts are global, memberships per tenant (DESIGN.md mechanism 9). The attack found from
 * outside: tenant A's owner added tenant V's owner with POST /users (201 with V's account id,
 * names and emailVerified), changed the account's email with PATCH /users/:id, asked for a reset
 * on the new address and owned the account. Each step must now be refused or reveal nothing.
 */
let p: IdentityPlatform;
let attacker: Registered;
let victim: Registered;
beforeAll(async () => {
  p = await startIdentityPlatform();
  attacker = await registerUser(p, { tenantName: 'Attacker Inc' });
  victim = await registerUser(p, { tenantName: 'Victim Ltd' });
});
afterAll(async () => {
  await p?.close();
});

const me = async (token: string) => (await p.api('/auth/me', { token })).body;

describe('given the owner of tenant A and the owner of tenant V', () => {
  it("when A adds V's email with POST /users, then the answer is the one an unknown email gets: 202, no id, no profile, and V joins nothing", async () => {
    const known = await p.api('/users', {
      token: attacker.accessToken,
      body: { email: victim.email, firstName: 'Mallory' },
    });
    const unknown = await p.api('/users', {
      token: attacker.accessToken,
      body: { email: uniqueEmail('nobody'), firstName: 'Mallory' },
    });
    expect(known.status).toBe(202);
    expect(unknown.status).toBe(202);
    expect(Object.keys(known.body).sort()).toEqual(['email', 'expires_at', 'invite_id']);
    expect(Object.keys(unknown.body).sort()).toEqual(Object.keys(known.body).sort());
    expect(JSON.stringify(known.body)).not.toContain(victim.userId);
    const listed = await p.api('/users?include_deleted=true', { token: attacker.accessToken });
    expect(listed.body.data.map((u: { id: string }) => u.id)).not.toContain(victim.userId);
    expect((await p.api('/auth/tenants', { token: victim.accessToken })).body.data).toHaveLength(1);
  });

  it("when A then patches V's account id, then it is 404 and V's email, names and verification stay as they were", async () => {
    const before = await me(victim.accessToken);
    const patched = await p.api(`/users/${victim.userId}`, {
      method: 'PATCH',
      token: attacker.accessToken,
      body: { email: uniqueEmail('mallory'), firstName: 'Pwned' },
    });
    expect(patched.status).toBe(404);
    expect(await me(victim.accessToken)).toMatchObject({
      email: before.email,
      firstName: before.firstName,
      emailVerified: before.emailVerified,
    });
  });

  it("when V accepts A's invitation with V's own password, then V is a member of both, and A may act on the membership but not on V's account", async () => {
    const before = p.smtp.messages.length;
    expect(
      (await p.api('/auth/invite', { token: attacker.accessToken, body: { email: victim.email, roles: ['Owner'] } }))
        .status,
    ).toBe(202);
    const token = await mailToken(p, victim.email, 'invite', before);
    const wrongPassword = await p.api('/auth/accept-invite', {
      body: { token, name: 'V', password: 'not the password of the account' },
    });
    expect(wrongPassword.status).toBe(401);
    const accepted = await p.api('/auth/accept-invite', {
      body: { token, name: 'ignored for an existing account', password: PASSWORD },
    });
    expect(accepted.status).toBe(201);
    expect(accepted.body.user.id).toBe(victim.userId);
    expect((await p.api('/auth/tenants', { token: victim.accessToken })).body.data).toHaveLength(2);

    const names = await p.api(`/users/${victim.userId}`, {
      method: 'PATCH',
      token: attacker.accessToken,
      body: { firstName: 'Pwned' },
    });
    expect(names.status).toBe(403);
    const email = await p.api(`/users/${victim.userId}`, {
      method: 'PATCH',
      token: attacker.accessToken,
      body: { email: uniqueEmail('mallory') },
    });
    expect(email.status).toBe(403);
    expect((await me(victim.accessToken)).firstName).toBe('Ada');
    // the membership is A's business
    const locked = await p.api(`/users/${victim.userId}`, {
      method: 'PATCH',
      token: attacker.accessToken,
      body: { status: 'locked' },
    });
    expect(locked.status).toBe(200);
    expect(
      (
        await p.api(`/users/${victim.userId}`, {
          method: 'PATCH',
          token: attacker.accessToken,
          body: { status: 'active' },
        })
      ).status,
    ).toBe(200);
  });
});

describe('an account that belongs to one tenant alone', () => {
  it("is managed by that tenant's administrator: names change at once, an address change waits for both confirmations", async () => {
    const owner = await registerUser(p);
    const member = await addMember(p, owner, { name: 'Ann Example' });
    const names = await p.api(`/users/${member.userId}`, {
      method: 'PATCH',
      token: owner.accessToken,
      body: { firstName: 'Anne' },
    });
    expect(names.status).toBe(200);
    expect(names.body.firstName).toBe('Anne');
    const newEmail = uniqueEmail('anne');
    const before = p.smtp.messages.length;
    const change = await p.api(`/users/${member.userId}`, {
      method: 'PATCH',
      token: owner.accessToken,
      body: { email: newEmail },
    });
    expect(change.status).toBe(200);
    expect(change.body.email).toBe(member.email);
    expect(await mailToken(p, member.email, 'email-change-old', before)).toEqual(expect.any(String));
    expect(await mailToken(p, newEmail, 'email-change-new', before)).toEqual(expect.any(String));
  });
});

describe('the holder changing their own address', () => {
  it('keeps the old address until the old address confirms and the new one is verified; then signs in with the new one only', async () => {
    const owner = await registerUser(p);
    const member = await addMember(p, owner); // no users.update: the holder edits their own record
    const newEmail = uniqueEmail('moved');
    const before = p.smtp.messages.length;
    const asked = await p.api(`/users/${member.userId}`, {
      method: 'PATCH',
      token: member.accessToken,
      body: { email: newEmail },
    });
    expect(asked.status).toBe(200);
    expect(asked.body.email).toBe(member.email);
    const fromOld = await mailToken(p, member.email, 'email-change-old', before);
    const fromNew = await mailToken(p, newEmail, 'email-change-new', before);

    const first = await p.api('/auth/confirm-email-change', { body: { token: fromNew } });
    expect(first.body).toEqual({ email_change: 'pending', confirmed: 'new' });
    expect((await me(member.accessToken)).email).toBe(member.email);
    expect((await p.api('/auth/login', { body: { email: newEmail, password: PASSWORD } })).status).toBe(401);

    const second = await p.api('/auth/confirm-email-change', { body: { token: fromOld } });
    expect(second.body).toEqual({ email_change: 'completed', email: newEmail });
    expect(await me(member.accessToken)).toMatchObject({ email: newEmail, emailVerified: true });
    expect((await p.api('/auth/login', { body: { email: newEmail, password: PASSWORD } })).status).toBe(200);
    expect((await p.api('/auth/login', { body: { email: member.email, password: PASSWORD } })).status).toBe(401);
    expect((await p.api('/auth/confirm-email-change', { body: { token: fromOld } })).status).toBe(401);
  });

  it("a plain member cannot change another member's record (403)", async () => {
    const owner = await registerUser(p);
    const one = await addMember(p, owner);
    const other = await addMember(p, owner);
    expect(
      (await p.api(`/users/${other.userId}`, { method: 'PATCH', token: one.accessToken, body: { firstName: 'X' } }))
        .status,
    ).toBe(403);
    expect(
      (await p.api(`/users/${one.userId}`, { method: 'PATCH', token: one.accessToken, body: { status: 'locked' } }))
        .status,
    ).toBe(403);
  });
});

describe('a verification token issued for an address the account no longer uses', () => {
  it('is refused with a problem and is not spent', async () => {
    const user = await registerUser(p);
    const verify = await mailToken(p, user.email, 'verify-email');
    const newEmail = uniqueEmail('next');
    const before = p.smtp.messages.length;
    await p.api(`/users/${user.userId}`, { method: 'PATCH', token: user.accessToken, body: { email: newEmail } });
    for (const [address, purpose] of [
      [user.email, 'email-change-old'],
      [newEmail, 'email-change-new'],
    ] as const) {
      expect(
        (await p.api('/auth/confirm-email-change', { body: { token: await mailToken(p, address, purpose, before) } }))
          .status,
      ).toBe(200);
    }
    const stale = await p.api('/auth/verify-email', { body: { token: verify } });
    expect(stale.status).toBe(401);
    expect(stale.headers.get('content-type')).toMatch(/problem\+json/);
    // not spent: the same token is refused again the same way (a spent one would be unknown, also 401 — so check the row)
    const { rows } = await p.kernel.db.query(
      "SELECT 1 FROM identity.one_time_tokens WHERE purpose = 'verify-email' AND user_id = $1",
      [user.userId],
    );
    expect(rows).toHaveLength(1);
    expect(stale.body.detail).toMatch(/no longer uses/);
  });

  it('before any change completes, a token for the current address still verifies', async () => {
    const user = await registerUser(p);
    const verify = await mailToken(p, user.email, 'verify-email');
    expect((await p.api('/auth/verify-email', { body: { token: verify } })).body).toEqual({ email_verified: true });
  });
});
