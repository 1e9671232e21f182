import { describe, it } from 'vitest';
import { accountDecider, type AccountEvent } from '../../../domain/identity/account';
import { membershipDecider, type MembershipEvent } from '../../../domain/identity/membership';
import { mfaDecider, type MfaEvent } from '../../../domain/identity/mfa';
import { roleDecider, type RoleEvent } from '../../../domain/identity/role';
import { tenantDecider } from '../../../domain/identity/tenant';
import { eventScenario } from '../../support/decider-scenario';

const U = 'u1';
const T = 't1';

describe('an MFA setup', () => {
  const given = eventScenario(mfaDecider);
  const started: MfaEvent = { type: 'auth.mfa.setup_started', data: { userId: U } };
  const enabled: MfaEvent = { type: 'auth.mfa.enabled', data: { userId: U } };
  it('starts from disabled', () => given().when({ type: 'StartMfaSetup', userId: U }).then([started]));
  it('is confirmed only when pending', () =>
    given().when({ type: 'ConfirmMfa', userId: U }).thenFails('validation-error', 400));
  it('turns on from pending', () => given(started).when({ type: 'ConfirmMfa', userId: U }).then([enabled]));
  it('refuses a second enable with 409 conflict', () =>
    given(started, enabled).when({ type: 'StartMfaSetup', userId: U }).thenFails('conflict', 409));
  it('refuses disable when not on with 400 validation-error', () =>
    given().when({ type: 'DisableMfa', userId: U }).thenFails('validation-error', 400));
  it('disables when on', () =>
    given(started, enabled)
      .when({ type: 'DisableMfa', userId: U })
      .then([{ type: 'auth.mfa.disabled', data: { userId: U } }]));
});

describe('failed recovery attempts', () => {
  const given = eventScenario(mfaDecider);
  const on: MfaEvent[] = [
    { type: 'auth.mfa.setup_started', data: { userId: U } },
    { type: 'auth.mfa.enabled', data: { userId: U } },
  ];
  const failed = (at: number, fingerprint = `code-${at}`): MfaEvent => ({
    type: 'auth.mfa.recovery_failed',
    data: { userId: U, at, fingerprint },
  });
  const fail = (now: number, fingerprint = `code-${now}`) => ({
    type: 'FailRecovery' as const,
    userId: U,
    now,
    fingerprint,
  });
  it('are counted below five', () =>
    given(...on, failed(1), failed(2))
      .when(fail(3))
      .then([failed(3)]));
  it('lock recovery for an hour at the fifth within 15 minutes', () =>
    given(...on, failed(1), failed(2), failed(3), failed(4))
      .when(fail(5))
      .then([
        failed(5),
        {
          type: 'auth.mfa.recovery_locked',
          data: { userId: U, until: 5 + 3600_000, lockout: 1, accountLocked: false },
        },
      ]));
  it('count a wrong code once however often it is repeated in the window', () =>
    given(...on, failed(1, 'same'), failed(2), failed(3), failed(4))
      .when(fail(5, 'same'))
      .then([]));
  it('count a repeated wrong code again once its first attempt left the window', () =>
    given(...on, failed(1, 'same'))
      .when(fail(16 * 60_000, 'same'))
      .then([failed(16 * 60_000, 'same')]));
  it('older than 15 minutes do not count', () =>
    given(...on, failed(1), failed(2), failed(3), failed(4))
      .when(fail(16 * 60_000))
      .then([failed(16 * 60_000)]));
  it('lock the account at the third lockout', () =>
    given(
      ...on,
      { type: 'auth.mfa.recovery_locked', data: { userId: U, until: 10, lockout: 2, accountLocked: false } },
      failed(11),
      failed(12),
      failed(13),
      failed(14),
    )
      .when(fail(15))
      .thenMatches([failed(15), { type: 'auth.mfa.recovery_locked', data: { lockout: 3, accountLocked: true } }]));
  it('refuse a recovery code while locked with 403 account-locked', () =>
    given(...on, {
      type: 'auth.mfa.recovery_locked',
      data: { userId: U, until: 1000, lockout: 1, accountLocked: false },
    })
      .when({ type: 'UseRecoveryCode', userId: U, remaining: 9, now: 999 })
      .thenFails('account-locked', 403));
});

describe('an account', () => {
  const given = eventScenario(accountDecider);
  const created: AccountEvent = {
    type: 'auth.user.created',
    data: {
      userId: U,
      tenantId: T,
      email: 'a@x.test',
      firstName: 'A',
      lastName: 'B',
      emailVerified: false,
      hasPassword: false,
      via: 'oidc',
    },
  };
  const linked: AccountEvent = {
    type: 'auth.user.provider_linked',
    data: {
      userId: U,
      linkId: 'l1',
      providerId: 'oidc',
      providerType: 'oauth',
      externalId: 'e',
      email: 'a@x.test',
      displayName: 'A',
      linkedAt: 'now',
    },
  };
  it('cannot be created twice (409)', () =>
    given(created)
      .when({ type: 'CreateAccount', ...created.data })
      .thenFails('conflict', 409));
  it('records a login', () =>
    given(created)
      .when({ type: 'RecordLogin', tenantId: T, method: 'password' })
      .then([{ type: 'auth.user.logged_in', data: { userId: U, tenantId: T, method: 'password' } }]));
  it('refuses a login when locked (403 account-locked)', () =>
    given(created, { type: 'auth.user.locked', data: { userId: U, reason: 'x' } })
      .when({ type: 'RecordLogin', tenantId: T, method: 'password' })
      .thenFails('account-locked', 403));
  it('keeps the last way to sign in (400 last-provider)', () =>
    given(created, linked).when({ type: 'UnlinkProvider', providerId: 'oidc' }).thenFails('last-provider', 400));
  it('keeps its address and its verification when names change', () =>
    given(created, { type: 'auth.user.email_verified', data: { userId: U, email: 'a@x.test' } })
      .when({ type: 'UpdateProfile', firstName: 'Ada' })
      .thenMatches([
        { type: 'auth.user.profile_updated', data: { email: 'a@x.test', firstName: 'Ada', emailVerified: true } },
      ]));
  it('moves to a new address, verified, only through ChangeEmail', () =>
    given(created)
      .when({ type: 'ChangeEmail', email: 'new@x.test' })
      .then([
        { type: 'auth.user.email_changed', data: { userId: U, email: 'new@x.test', previousEmail: 'a@x.test' } },
      ]));
  it('does nothing for a change to the address it has', () =>
    given(created).when({ type: 'ChangeEmail', email: 'a@x.test' }).then([]));
  it('does nothing for an unchanged profile', () =>
    given(created).when({ type: 'UpdateProfile', firstName: 'A' }).then([]));
});

describe('a membership', () => {
  const given = eventScenario(membershipDecider);
  const added = (roleIds: string[]): MembershipEvent => ({
    type: 'auth.member.added',
    data: { userId: U, tenantId: T, roleIds, via: 'admin' },
  });
  it('assigns a role with auth.role.changed', () =>
    given(added([]))
      .when({ type: 'AssignRole', roleId: 'r1', roleName: 'R' })
      .then([
        {
          type: 'auth.role.changed',
          data: { userId: U, tenantId: T, roleId: 'r1', roleName: 'R', change: 'assigned', roleIds: ['r1'] },
        },
      ]));
  it('assigning a held role is already done', () =>
    given(added(['r1']))
      .when({ type: 'AssignRole', roleId: 'r1', roleName: 'R' })
      .then([]));
  it('refuses the 51st role (rbac-limit-exceeded)', () =>
    given(added(Array.from({ length: 50 }, (_, i) => `r${i}`)))
      .when({ type: 'AssignRole', roleId: 'x', roleName: 'X' })
      .thenFails('rbac-limit-exceeded', 400));
  it('is soft-deleted and restored to its former status', () =>
    given(added([]), { type: 'auth.member.deleted', data: { userId: U, tenantId: T, deletedAt: 'now' } })
      .when({ type: 'RestoreMember' })
      .then([{ type: 'auth.member.restored', data: { userId: U, tenantId: T, status: 'active' } }]));
  it('of another tenant is not found', () =>
    given().when({ type: 'AssignRole', roleId: 'r1', roleName: 'R' }).thenFails('not-found', 404));
});

describe('a role', () => {
  const given = eventScenario(roleDecider);
  const owner: RoleEvent = {
    type: 'auth.role.created',
    data: { roleId: 'r', tenantId: T, name: 'Owner', description: '', permissions: [], builtIn: true, createdBy: U },
  };
  it('refuses more than 1,000 permissions', () =>
    given()
      .when({
        type: 'CreateRole',
        roleId: 'r',
        tenantId: T,
        name: 'R',
        description: '',
        permissions: Array.from({ length: 1001 }, (_, i) => `a.p${i}`),
        builtIn: false,
        createdBy: U,
      })
      .thenFails('rbac-limit-exceeded', 400));
  it('built in cannot be deleted', () => given(owner).when({ type: 'DeleteRole' }).thenFails('validation-error', 400));
  it('sorts and deduplicates permissions', () =>
    given()
      .when({
        type: 'CreateRole',
        roleId: 'r',
        tenantId: T,
        name: 'R',
        description: '',
        permissions: ['b.x', 'a.x', 'b.x'],
        builtIn: false,
        createdBy: U,
      })
      .thenMatches([{ data: { permissions: ['a.x', 'b.x'] } }]));
});

describe('a tenant', () => {
  const given = eventScenario(tenantDecider);
  it('records an impersonation as auth.impersonation.started', () =>
    given({ type: 'auth.tenant.created', data: { tenantId: T, name: 'n', slug: 's', ownerId: U, ownerRoleId: 'r' } })
      .when({
        type: 'StartImpersonation',
        tenantId: T,
        impersonatorId: 'root',
        userId: U,
        reason: 'why',
        note: '',
        expiresAt: 'later',
      })
      .thenMatches([{ type: 'auth.impersonation.started', data: { impersonatorId: 'root', reason: 'why' } }]));
  it('that does not exist cannot be impersonated (404)', () =>
    given()
      .when({
        type: 'StartImpersonation',
        tenantId: T,
        impersonatorId: 'root',
        userId: U,
        reason: 'why',
        note: '',
        expiresAt: 'later',
      })
      .thenFails('not-found', 404));
});
