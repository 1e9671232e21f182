import { describe, expect, it } from 'vitest';
import type { Authority } from '../../../domain/identity/authority';
import { assertMayAssign, assertMayGive, assertMayGrant, notHeld } from '../../../domain/identity/authority';
import { DomainError } from '../../../domain/shared/errors';
import { grants } from '../../../domain/shared/permissions';

const holding = (permissions: string[], o: { isOwner?: boolean; userId?: string } = {}): Authority => ({
  userId: o.userId ?? 'me',
  permissions: new Set(permissions),
  isOwner: o.isOwner ?? false,
});
const suffixOf = (fn: () => void): string | null => {
  try {
    fn();
    return null;
  } catch (e) {
    return e instanceof DomainError ? e.suffix : String(e);
  }
};

describe('the one wildcard rule', () => {
  it('grants an exact key, then {module}.*; platform.* grants everything', () => {
    expect(grants(new Set(['users.list']), 'users.list')).toBe(true);
    expect(grants(new Set(['users.*']), 'users.delete')).toBe(true);
    expect(grants(new Set(['platform.*']), 'money.wallets.write')).toBe(true);
    expect(grants(new Set(['users.list']), 'users.delete')).toBe(false);
  });
  it('never resolves a deeper wildcard', () => {
    expect(grants(new Set(['money.wallets.*']), 'money.wallets.write')).toBe(false);
  });
  it('grants a wildcard only to a holder of that wildcard (it covers keys registered later)', () => {
    expect(grants(new Set(['users.list', 'users.create', 'users.update']), 'users.*')).toBe(false);
    expect(grants(new Set(['users.*']), 'users.*')).toBe(true);
  });
});

describe('a role manager holding roles.create and roles.assign only', () => {
  const manager = holding(['roles.create', 'roles.assign']);
  it('cannot put into a role what it does not hold (403 insufficient-role)', () => {
    expect(suffixOf(() => assertMayGrant(manager, ['users.delete', 'money.wallets.write']))).toBe('insufficient-role');
    expect(notHeld(manager, ['roles.create', 'users.delete'])).toEqual(['users.delete']);
  });
  it('may put into a role what it holds', () =>
    expect(suffixOf(() => assertMayGrant(manager, ['roles.create']))).toBeNull());
  it('cannot assign the Owner role (only an Owner may)', () =>
    expect(
      suffixOf(() => assertMayAssign(manager, { name: 'Owner', builtIn: true, permissions: [] }, 'someone', 'assign')),
    ).toBe('insufficient-role'));
  it('cannot assign any role to itself (403 self-delegation)', () =>
    expect(
      suffixOf(() =>
        assertMayAssign(manager, { name: 'Small', builtIn: false, permissions: ['roles.create'] }, 'me', 'assign'),
      ),
    ).toBe('self-delegation'));
  it('cannot give a role that grants more than it holds to a new member', () =>
    expect(suffixOf(() => assertMayGive(manager, [{ name: 'Big', builtIn: false, permissions: ['users.*'] }]))).toBe(
      'insufficient-role',
    ));
});

describe('an Owner', () => {
  const owner = holding(['users.*', 'roles.*', 'money.*'], { isOwner: true });
  it('assigns and revokes the Owner role of others', () => {
    expect(
      suffixOf(() => assertMayAssign(owner, { name: 'Owner', builtIn: true, permissions: [] }, 'other', 'assign')),
    ).toBeNull();
    expect(
      suffixOf(() => assertMayAssign(owner, { name: 'Owner', builtIn: true, permissions: [] }, 'other', 'revoke')),
    ).toBeNull();
  });
  it('may revoke its own roles but not assign itself one', () => {
    expect(
      suffixOf(() => assertMayAssign(owner, { name: 'Owner', builtIn: true, permissions: [] }, 'me', 'revoke')),
    ).toBeNull();
    expect(
      suffixOf(() => assertMayAssign(owner, { name: 'Owner', builtIn: true, permissions: [] }, 'me', 'assign')),
    ).toBe('self-delegation');
  });
});
