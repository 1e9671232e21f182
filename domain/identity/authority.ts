import { grants, PLATFORM_WILDCARD } from '../shared/permissions';
import { OWNER_ROLE } from './constants';
import { identityErrors } from './errors';

/**
 * Who is granting, and what they hold (DESIGN.md mechanism 9: nobody grants what they do not
 * hold). Built from the verified principal; pure rules over it.
 */
export interface Authority {
  userId: string;
  permissions: ReadonlySet<string>;
  /** holds the tenant's built-in Owner role */
  isOwner: boolean;
}

/** Permissions only the platform owner holds (spec 000: users.impersonate is the platform owner's). */
export const PLATFORM_ONLY_PERMISSIONS: ReadonlySet<string> = new Set(['users.impersonate']);

/**
 * The requested permissions the authority does not hold itself. An Owner holds every permission of
 * the tenant, wildcards included (its role grants the modules installed later too), but never the
 * platform owner's.
 */
export const notHeld = (authority: Authority, permissions: readonly string[]): string[] =>
  [...new Set(permissions)]
    .filter(
      (p) =>
        !grants(authority.permissions, p) &&
        !(authority.isOwner && !PLATFORM_ONLY_PERMISSIONS.has(p) && !/^(platform|system)\./.test(p)),
    )
    .sort();

/** creating, changing or deleting a role, or giving its permissions to someone, stays within what the caller holds */
export const assertMayGrant = (authority: Authority, permissions: readonly string[]): void => {
  const missing = notHeld(authority, permissions);
  if (missing.length)
    throw identityErrors.insufficientRole(
      `Your roles do not hold ${missing.slice(0, 10).join(', ')}${missing.length > 10 ? ', …' : ''}; you cannot grant what you do not hold.`,
    );
};

export interface GrantedRole {
  name: string;
  builtIn: boolean;
  permissions: readonly string[];
}

const isOwnerRole = (role: GrantedRole) => role.builtIn && role.name === OWNER_ROLE;

/**
 * Assigning or revoking a role: the Owner role only by an Owner (or the platform owner); any other
 * role only by a holder of all its permissions; a role is never assigned by its future holder.
 */
export const assertMayAssign = (
  authority: Authority,
  role: GrantedRole,
  targetUserId: string,
  change: 'assign' | 'revoke',
): void => {
  if (change === 'assign' && targetUserId === authority.userId) throw identityErrors.selfDelegation();
  if (isOwnerRole(role)) {
    if (!authority.isOwner && !authority.permissions.has(PLATFORM_WILDCARD))
      throw identityErrors.insufficientRole('Only an Owner may assign or revoke the Owner role.');
    return;
  }
  assertMayGrant(authority, role.permissions);
};

/** the roles given to a new member (POST /users, invitations): each within the inviter's authority */
export const assertMayGive = (authority: Authority, roles: readonly GrantedRole[]): void => {
  for (const role of roles) {
    if (isOwnerRole(role)) {
      if (!authority.isOwner && !authority.permissions.has(PLATFORM_WILDCARD))
        throw identityErrors.insufficientRole('Only an Owner may give the Owner role.');
    } else {
      assertMayGrant(authority, role.permissions);
    }
  }
};

/** the authority of a verified caller (impersonation acts with the impersonated user's roles) */
export const authorityOf = (principal: {
  userId: string;
  permissions: ReadonlySet<string>;
  roles: readonly string[];
}): Authority => ({
  userId: principal.userId,
  permissions: principal.permissions,
  isOwner: principal.roles.includes(OWNER_ROLE),
});
