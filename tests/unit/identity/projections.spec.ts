import { describe, expect, it } from 'vitest';
import { PLATFORM_TENANT_ID } from '../../../domain/identity/constants';
import type { StoredEvent } from '../../../domain/shared/event';
import type { AnyProjection, Statement } from '../../../infra/projections/projection';
import { accounts, members, roles, tenants } from '../../../projections/identity';

/*
 * The identity read models' statements, event by event: what each event writes, that every
 * statement names its tenant, that updates are guarded by the stream version (a replay changes
 * nothing), and that an event whose data does not match the domain's schema is refused rather than
 * written half (the projections parse with the domain's zod unions).
 */

const TENANT = 'tenant-a';
const AT = '2025-03-01T10:00:00.000Z';
const tables = {
  iam_accounts: 'rm.iam_accounts',
  iam_provider_links: 'rm.iam_provider_links',
  iam_members: 'rm.iam_members',
  iam_roles: 'rm.iam_roles',
  iam_tenants: 'rm.iam_tenants',
};

const stored = (
  type: string,
  data: Record<string, unknown>,
  o: { tenantId?: string; version?: number } = {},
): StoredEvent<Record<string, unknown>> => ({
  eventId: '0190c0de-0000-7000-8000-000000000001',
  type,
  schemaVersion: 1,
  tenantId: o.tenantId ?? TENANT,
  actorId: 'u-1',
  traceId: null,
  causationId: null,
  correlationId: null,
  occurredAt: AT,
  streamId: `s:${o.tenantId ?? TENANT}:x`,
  streamVersion: o.version ?? 3,
  position: 10n,
  transactionId: 5n,
  data,
});

const evolve = (p: AnyProjection, event: StoredEvent<Record<string, unknown>>): Statement[] => p.evolve(event, tables);
const one = (p: AnyProjection, event: StoredEvent<Record<string, unknown>>): Statement => {
  const statements = evolve(p, event);
  expect(statements).toHaveLength(1);
  return statements[0]!;
};
/** every statement is scoped to the event's tenant: tenant_id is compared (or inserted) as $1, the event's tenant */
const scoped = (s: Statement, tenantId = TENANT) => {
  expect(s.text).toMatch(/tenant_id/);
  expect(s.values[0]).toBe(tenantId);
};

const account = {
  userId: 'u-1',
  tenantId: 'tenant-a',
  email: 'ada@example.test',
  firstName: 'Ada',
  lastName: 'Lovelace',
  emailVerified: false,
  hasPassword: true,
  via: 'register',
};

describe('the accounts read model', () => {
  it('inserts a created account in the platform tenant once (a replay inserts nothing: ON CONFLICT DO NOTHING)', () => {
    const s = one(accounts, stored('auth.user.created', account, { tenantId: PLATFORM_TENANT_ID, version: 1 }));
    scoped(s, PLATFORM_TENANT_ID);
    expect(s.text).toMatch(/^INSERT INTO rm\.iam_accounts .* ON CONFLICT \(tenant_id, id\) DO NOTHING$/s);
    expect(s.values).toEqual([PLATFORM_TENANT_ID, 'u-1', 'ada@example.test', 'Ada', 'Lovelace', false, AT, 1]);
  });

  it('updates a profile only from an older version (the stream version guards every update)', () => {
    const s = one(
      accounts,
      stored(
        'auth.user.profile_updated',
        {
          userId: 'u-1',
          email: 'ada@example.test',
          firstName: 'Ada',
          lastName: 'King',
          avatarUrl: 'https://a.test/a.png',
          emailVerified: true,
        },
        { version: 7 },
      ),
    );
    scoped(s);
    expect(s.text).toMatch(/WHERE tenant_id = \$1 AND id = \$2 AND version < \$9$/);
    expect(s.values).toEqual([TENANT, 'u-1', 'ada@example.test', 'Ada', 'King', 'https://a.test/a.png', true, AT, 7]);
  });

  it.each([
    ['auth.user.email_verified', { userId: 'u-1', email: 'ada@example.test' }, /SET email_verified = true/],
    [
      'auth.user.email_changed',
      { userId: 'u-1', email: 'new@example.test', previousEmail: 'ada@example.test' },
      /SET email = \$3, email_verified = true/,
    ],
    ['auth.user.locked', { userId: 'u-1', reason: '3 recovery lockouts' }, /SET status = \$3/],
    ['auth.user.unlocked', { userId: 'u-1' }, /SET status = \$3/],
  ])('writes %s as one guarded update of the account', (type, data, set) => {
    const s = one(accounts, stored(type, data));
    scoped(s);
    expect(s.text).toMatch(set);
    expect(s.text).toMatch(/AND version < \$\d+$/);
    expect(s.values[1]).toBe('u-1');
  });

  it('locks and unlocks by the status column', () => {
    expect(one(accounts, stored('auth.user.locked', { userId: 'u-1', reason: 'r' })).values[2]).toBe('locked');
    expect(one(accounts, stored('auth.user.unlocked', { userId: 'u-1' })).values[2]).toBe('active');
  });

  it('ends every session of the account on a password change and a lock (the session generation rises), not on an unlock', () => {
    const changed = one(accounts, stored('auth.user.password_changed', { userId: 'u-1', reason: 'reset' }));
    scoped(changed);
    expect(changed.text).toMatch(/SET session_generation = session_generation \+ 1,/);
    expect(changed.text).toMatch(/AND version < \$4$/);
    const bySql = (type: string) => one(accounts, stored(type, { userId: 'u-1', reason: 'r' }));
    expect(bySql('auth.user.locked').text).toMatch(/session_generation = session_generation \+ \$6/);
    expect(bySql('auth.user.locked').values[5]).toBe(1);
    expect(bySql('auth.user.unlocked').values[5]).toBe(0);
  });

  it("sets the MFA flag under the MFA stream's own version column", () => {
    const on = one(accounts, stored('auth.mfa.enabled', { userId: 'u-1' }, { version: 2 }));
    expect(on.text).toMatch(/mfa_version < \$5$/);
    expect(on.values).toEqual([TENANT, 'u-1', true, AT, 2]);
    expect(one(accounts, stored('auth.mfa.disabled', { userId: 'u-1' }, { version: 4 })).values[2]).toBe(false);
  });

  it('keeps a provider link as a row of its own, and deletes it on unlink', () => {
    const link = {
      userId: 'u-1',
      linkId: 'l-1',
      providerId: 'siwe',
      providerType: 'wallet',
      externalId: '0xAb',
      email: '',
      displayName: '0xAb…',
      linkedAt: AT,
    };
    const linked = one(accounts, stored('auth.user.provider_linked', link));
    scoped(linked);
    expect(linked.text).toMatch(/^INSERT INTO rm\.iam_provider_links .* ON CONFLICT \(tenant_id, id\) DO NOTHING$/s);
    expect(linked.values).toEqual([TENANT, 'l-1', 'u-1', 'siwe', 'wallet', '0xAb', '', '0xAb…', AT]);
    const unlinked = one(
      accounts,
      stored('auth.user.provider_unlinked', { userId: 'u-1', linkId: 'l-1', providerId: 'siwe' }),
    );
    expect(unlinked.text).toBe('DELETE FROM rm.iam_provider_links WHERE tenant_id = $1 AND id = $2');
    expect(unlinked.values).toEqual([TENANT, 'l-1']);
  });

  it('writes nothing for account events the read model does not show', () => {
    expect(
      evolve(accounts, stored('auth.user.logged_in', { userId: 'u-1', tenantId: TENANT, method: 'password' })),
    ).toEqual([]);
    expect(evolve(accounts, stored('auth.mfa.setup_started', { userId: 'u-1' }))).toEqual([]);
  });

  it("refuses an event whose data does not match the domain's schema, instead of writing undefined columns", () => {
    expect(() => evolve(accounts, stored('auth.user.created', { ...account, email: undefined }))).toThrow();
    expect(() => evolve(accounts, stored('auth.user.locked', { userId: 42, reason: 'r' }))).toThrow();
  });
});

describe('the members read model', () => {
  const member = { userId: 'u-2', tenantId: TENANT };

  it('inserts an added member with its roles, once', () => {
    const s = one(
      members,
      stored('auth.member.added', { ...member, roleIds: ['r-1', 'r-2'], via: 'invite' }, { version: 1 }),
    );
    scoped(s);
    expect(s.text).toMatch(/ON CONFLICT \(tenant_id, user_id\) DO NOTHING$/);
    expect(s.values).toEqual([TENANT, 'u-2', 1, ['r-1', 'r-2'], AT]);
  });

  it.each([
    [
      'auth.role.changed',
      { ...member, roleId: 'r-1', roleName: 'Reader', change: 'revoked', roleIds: ['r-2'] },
      /SET role_ids = \$4/,
      ['r-2'],
    ],
    ['auth.member.deleted', { ...member, deletedAt: AT }, /SET status = 'pending_deletion', deleted_at = \$4/, AT],
    ['auth.member.restored', { ...member, status: 'locked' }, /SET status = \$4, deleted_at = NULL/, 'locked'],
    ['auth.member.status_changed', { ...member, status: 'locked' }, /SET status = \$4,/, 'locked'],
  ])('writes %s as one update guarded by the stream version', (type, data, set, fourth) => {
    const s = one(members, stored(type, data, { version: 5 }));
    scoped(s);
    expect(s.text).toMatch(set);
    expect(s.text).toMatch(/WHERE tenant_id = \$1 AND user_id = \$2 AND version < \$3$/);
    expect(s.values.slice(0, 4)).toEqual([TENANT, 'u-2', 5, fourth]);
  });

  it("ends the member's sessions in the tenant on a lock and a deletion (the session generation rises), not on an unlock or a restore", () => {
    const raise = (type: string, data: Record<string, unknown>) => {
      const s = one(members, stored(type, { ...member, ...data }));
      const increment = /session_generation = session_generation \+ (1|\$6)/.exec(s.text);
      return increment?.[1] === '1' ? 1 : increment ? s.values[5] : 0;
    };
    expect(raise('auth.member.status_changed', { status: 'locked' })).toBe(1);
    expect(raise('auth.member.deleted', { deletedAt: AT })).toBe(1);
    expect(raise('auth.member.status_changed', { status: 'active' })).toBe(0);
    expect(raise('auth.member.restored', { status: 'active' })).toBe(0);
  });

  it('refuses a status the domain does not know', () => {
    expect(() => evolve(members, stored('auth.member.status_changed', { ...member, status: 'banned' }))).toThrow();
  });
});

describe('the roles read model', () => {
  const role = { roleId: 'r-1', tenantId: TENANT, name: 'Reader', description: 'reads', permissions: ['users.list'] };

  it('inserts a created role once, updates it from older versions only, and deletes it', () => {
    const created = one(
      roles,
      stored('auth.role.created', { ...role, builtIn: false, createdBy: 'u-1' }, { version: 1 }),
    );
    scoped(created);
    expect(created.values).toEqual([TENANT, 'r-1', 'Reader', 'reads', ['users.list'], false, 'u-1', AT, 1]);
    const updated = one(
      roles,
      stored('auth.role.updated', { ...role, permissions: ['users.list', 'roles.list'] }, { version: 2 }),
    );
    expect(updated.text).toMatch(/AND version < \$7$/);
    expect(updated.values).toEqual([TENANT, 'r-1', 'Reader', 'reads', ['users.list', 'roles.list'], AT, 2]);
    const deleted = one(roles, stored('auth.role.deleted', { roleId: 'r-1', tenantId: TENANT, name: 'Reader' }));
    expect(deleted.text).toBe('DELETE FROM rm.iam_roles WHERE tenant_id = $1 AND id = $2');
  });

  it('refuses permissions that are not a list of keys', () => {
    expect(() => evolve(roles, stored('auth.role.updated', { ...role, permissions: 'users.list' }))).toThrow();
  });
});

describe('the tenants read model', () => {
  it('inserts a created tenant once and ignores impersonation records', () => {
    const s = one(
      tenants,
      stored('auth.tenant.created', {
        tenantId: TENANT,
        name: 'Acme',
        slug: 'acme',
        ownerId: 'u-1',
        ownerRoleId: 'r-0',
      }),
    );
    scoped(s);
    expect(s.text).toMatch(/ON CONFLICT \(tenant_id\) DO NOTHING$/);
    expect(s.values).toEqual([TENANT, 'Acme', 'acme', 'u-1', 'r-0', AT]);
    expect(
      evolve(
        tenants,
        stored('auth.impersonation.started', {
          tenantId: TENANT,
          impersonatorId: 'p-1',
          userId: 'u-1',
          reason: 'support',
          note: '',
          expiresAt: AT,
        }),
      ),
    ).toEqual([]);
  });
});
