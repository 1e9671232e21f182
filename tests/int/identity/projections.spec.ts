import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createSiweMessage } from 'viem/siwe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../../domain/shared/event';
import { LOG_START } from '../../../infra/eventstore/event-store';
import type { AnyProjection } from '../../../infra/projections/projection';
import { totpCode } from '../../../infra/security/totp';
import { accounts, members, roles, tenants } from '../../../projections/identity';
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
 * The identity read models against the database: a realistic identity log is made through the
 * HTTP API (registrations, invitations, roles created, changed, given, taken back and deleted,
 * profiles, an address change, members locked, deleted and restored, MFA on and off, a wallet
 * linked and unlinked, an impersonation), then replayed into fresh tables of our own — once, and
 * twice in a row — and compared with each other and with the live read model the commands wrote
 * inline.
 */

type Events = StoredEvent<Record<string, unknown>>[];

let p: IdentityPlatform;
let events: Events;

const PROJECTIONS: { p: AnyProjection; table: string; key: string }[] = [
  { p: accounts, table: 'iam_accounts', key: 'tenant_id, id' },
  { p: accounts, table: 'iam_provider_links', key: 'tenant_id, id' },
  { p: members, table: 'iam_members', key: 'tenant_id, user_id' },
  { p: roles, table: 'iam_roles', key: 'tenant_id, id' },
  { p: tenants, table: 'iam_tenants', key: 'tenant_id' },
];

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are read loosely, as in every identity suite
const ok = async (res: Promise<{ status: number; body: any }>, status = 200) => {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r;
};

const now = () => Math.floor(p.clock.now().getTime() / 1000);

const linkWallet = async (user: Registered) => {
  const account = privateKeyToAccount(generatePrivateKey());
  const start = (await ok(p.api('/auth/login/siwe', { method: 'POST' }))).body;
  const message = createSiweMessage({
    address: account.address,
    chainId: start.chainId,
    domain: start.domain,
    nonce: start.nonce,
    uri: start.uri,
    version: '1',
    issuedAt: new Date(start.issuedAt),
  });
  const signature = await account.signMessage({ message });
  await ok(
    p.api(`/users/${user.userId}/providers/siwe`, { token: user.accessToken, body: { message, signature } }),
    201,
  );
};

/** one tenant's history: every kind of identity event */
const makeHistory = async (owner: Registered) => {
  const reader = await ok(
    p.api('/rbac/roles', {
      token: owner.accessToken,
      body: { name: 'Reader', description: 'reads', permissions: ['users.list'] },
    }),
    201,
  );
  const temp = await ok(
    p.api('/rbac/roles', { token: owner.accessToken, body: { name: 'Temp', permissions: [] } }),
    201,
  );
  await ok(
    p.api(`/rbac/roles/${reader.body.id}`, {
      method: 'PUT',
      token: owner.accessToken,
      body: { description: 'reads users and roles', permissions: ['users.list', 'roles.list'] },
    }),
  );
  const member = await addMember(p, owner, { roles: ['Reader'] });
  const other = await addMember(p, owner, { roles: ['Reader'] });
  await ok(p.api(`/rbac/roles/${temp.body.id}/assign`, { token: owner.accessToken, body: { user_id: member.userId } }));
  await ok(p.api(`/rbac/roles/${temp.body.id}/revoke`, { token: owner.accessToken, body: { user_id: member.userId } }));
  await ok(p.api(`/rbac/roles/${temp.body.id}`, { method: 'DELETE', token: owner.accessToken }), 204);
  await ok(
    p.api(`/users/${member.userId}`, {
      method: 'PATCH',
      token: member.accessToken,
      body: { firstName: 'Grace', lastName: 'Brewster', avatarUrl: 'https://example.test/g.png' },
    }),
  );
  await ok(p.api(`/users/${other.userId}`, { method: 'PATCH', token: owner.accessToken, body: { status: 'locked' } }));
  await ok(p.api(`/users/${other.userId}`, { method: 'PATCH', token: owner.accessToken, body: { status: 'active' } }));
  await ok(p.api(`/users/${other.userId}`, { method: 'DELETE', token: owner.accessToken }));
  await ok(p.api(`/users/${other.userId}/restore`, { method: 'PATCH', token: owner.accessToken }));
  // the owner's own address change, confirmed from both addresses
  const before = p.smtp.messages.length;
  const newEmail = uniqueEmail('moved');
  await ok(p.api(`/users/${owner.userId}`, { method: 'PATCH', token: owner.accessToken, body: { email: newEmail } }));
  for (const side of ['old', 'new'] as const) {
    await ok(
      p.api('/auth/confirm-email-change', {
        body: { token: await mailToken(p, side === 'old' ? owner.email : newEmail, `email-change-${side}`, before) },
      }),
    );
  }
  // MFA on, then off
  const enable = await ok(p.api('/auth/mfa/enable', { token: member.accessToken, body: {} }));
  await ok(
    p.api('/auth/mfa/verify', {
      token: member.accessToken,
      body: { code: totpCode(enable.body.secret as string, now()) },
    }),
  );
  p.clock.advance(30_000);
  await ok(
    p.api('/auth/mfa/disable', {
      token: member.accessToken,
      body: { password: PASSWORD, code: totpCode(enable.body.secret as string, now()) },
    }),
  );
  await linkWallet(owner);
  await ok(p.api(`/users/${owner.userId}/providers/siwe`, { method: 'DELETE', token: owner.accessToken }), 204);
  await linkWallet(owner);
};

/** an account locked by its third recovery lockout (15 wrong codes), then unlocked by a password reset */
const lockAndReset = async (user: Registered) => {
  const enable = await ok(p.api('/auth/mfa/enable', { token: user.accessToken, body: {} }));
  await ok(
    p.api('/auth/mfa/verify', {
      token: user.accessToken,
      body: { code: totpCode(enable.body.secret as string, now()) },
    }),
  );
  let guess = 0;
  for (let lockout = 1; lockout <= 3; lockout += 1) {
    for (let i = 0; i < 5; i += 1)
      await ok(
        p.api('/auth/recovery', {
          body: { email: user.email, recovery_code: `AAAA-BBBB-${String(guess++).padStart(4, '0')}` },
        }),
        401,
      );
    p.clock.advance(3600_000 + 1000);
  }
  const before = p.smtp.messages.length;
  await ok(p.api('/auth/request-reset', { body: { email: user.email } }), 202);
  await ok(
    p.api('/auth/reset-password', {
      body: { token: await mailToken(p, user.email, 'reset', before), password: `${PASSWORD} again` },
    }),
  );
};

beforeAll(async () => {
  p = await startIdentityPlatform();
  const [a, b] = [await registerUser(p), await registerUser(p)];
  await ok(p.api('/auth/verify-email', { body: { token: await mailToken(p, a.email, 'verify-email') } }));
  await makeHistory(a);
  await makeHistory(b);
  await lockAndReset(await registerUser(p));
  events = await p.kernel.store.readAll(p.kernel.db, LOG_START, 100_000, { allCommitted: true });
  await p.kernel.db.query('CREATE SCHEMA pi');
});
afterAll(async () => {
  await p?.close();
});

const db = () => p.kernel.db;
const handled = (projection: AnyProjection, list: Events) => list.filter((e) => projection.handles.includes(e.type));
const apply = async (projection: AnyProjection, list: Events, tables: Record<string, string>) => {
  for (const e of handled(projection, list))
    for (const s of projection.evolve(e, tables)) await db().query(s.text, s.values);
};

/** creates the variant's tables with the projections' own DDL, applies the log `times` times, returns the rows of each in key order */
const build = async (variant: string, list: Events, times: number) => {
  const rows: Record<string, unknown[]> = {};
  for (const projection of new Set(PROJECTIONS.map((x) => x.p))) {
    const physical = Object.fromEntries(
      Object.keys(projection.tables).map((table) => [table, `pi.${table}_${variant}`]),
    );
    for (const [table, make] of Object.entries(projection.tables))
      for (const ddl of make(physical[table]!)) await db().query(ddl);
    for (let i = 0; i < times; i += 1) await apply(projection, list, physical);
    for (const { table, key } of PROJECTIONS.filter((x) => x.p === projection))
      rows[table] = (await db().query(`SELECT * FROM ${physical[table]} ORDER BY ${key}`)).rows;
  }
  return rows;
};

describe('given a realistic identity log of two tenants', () => {
  let reference: Record<string, unknown[]>;
  beforeAll(async () => {
    reference = await build('once', events, 1);
  });

  it('then it holds every kind of event the read models handle', () => {
    const handledTypes = new Set(PROJECTIONS.flatMap((x) => x.p.handles));
    expect(new Set(events.map((e) => e.type).filter((t) => handledTypes.has(t)))).toEqual(handledTypes);
    expect(reference.iam_provider_links).toHaveLength(2);
    // MFA stays on only for the account of the lockouts; the reset lifted its lock
    const rows = reference.iam_accounts as { mfa_enabled: boolean; status: string }[];
    expect(rows.filter((a) => a.mfa_enabled)).toHaveLength(1);
    expect(rows.every((a) => a.status === 'active')).toBe(true);
  });

  it('when the log is replayed twice in a row, then nothing changes (idempotence)', async () => {
    expect(await build('twice', events, 2)).toEqual(reference);
  });

  it('when every event is applied twice in a row, then nothing changes', async () => {
    expect(
      await build(
        'doubled',
        events.flatMap((e) => [e, e]),
        1,
      ),
    ).toEqual(reference);
  });

  it('then the live read model, written inline by the commands, has the same rows', async () => {
    for (const { table, key } of PROJECTIONS) {
      expect((await db().query(`SELECT * FROM rm.${table} ORDER BY ${key}`)).rows, table).toEqual(reference[table]);
    }
  });
});
