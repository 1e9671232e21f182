import { PLATFORM_ONLY_PERMISSIONS } from './authority';
import { LIFETIMES, OWNER_ROLE, PLATFORM_TENANT_ID } from './constants';

/**
 * What a user may do in a tenant, from the read models' rows: an active account, an active
 * membership, the roles held and the union of their permissions. The built-in Owner role of a
 * tenant holds every registered permission but the platform owner's, also those of modules
 * installed after the tenant was created. Pure: the command side's loader
 * (commands/identity/lookups.ts) and the read side's permission views
 * (projections/identity/queries.ts) both map their rows through it.
 */
export interface MemberAccess {
  userId: string;
  tenantId: string;
  email: string;
  emailVerified: boolean;
  roles: string[];
  permissions: Set<string>;
  /**
   * how many times the sessions of this account in this tenant were ended (password reset, account
   * lock; membership lock or deletion): a session — its refresh family and every access token it
   * was given — started under a lower number is over (access tokens carry it as `sgen`)
   */
  sessionGeneration: number;
}

/** one row per role held (name null: a membership without roles) */
export interface AccessRow {
  email: string;
  email_verified: boolean;
  account_status: string;
  member_status: string;
  name: string | null;
  permissions: string[] | null;
  built_in: boolean | null;
  /** the account's session generation (every tenant) and the membership's (this tenant) */
  account_sessions: number;
  member_sessions: number;
}

/** what the built-in Owner role of a tenant grants: every registered permission but the platform owner's (modules added later included) */
export const ownerGrants = (registered: readonly string[]): string[] =>
  registered.filter((key) => !PLATFORM_ONLY_PERMISSIONS.has(key));

/** the permissions a role grants in a tenant; `registered` are the permission keys of the running platform */
export const roleGrants = (
  role: { name: string; builtIn: boolean; permissions: readonly string[] },
  tenantId: string,
  registered: readonly string[],
): readonly string[] =>
  role.builtIn && role.name === OWNER_ROLE && tenantId !== PLATFORM_TENANT_ID
    ? ownerGrants(registered)
    : role.permissions;

/** null: no access (no membership, or the account or the membership is not active) */
export const accessOf = (
  userId: string,
  tenantId: string,
  rows: readonly AccessRow[],
  registered: readonly string[],
): MemberAccess | null => {
  const first = rows[0];
  if (!first || first.account_status !== 'active' || first.member_status !== 'active') return null;
  const permissions = new Set<string>();
  const roles: string[] = [];
  for (const row of rows) {
    if (row.name === null) continue;
    roles.push(row.name);
    for (const p of roleGrants(
      { name: row.name, builtIn: row.built_in ?? false, permissions: row.permissions ?? [] },
      tenantId,
      registered,
    ))
      permissions.add(p);
  }
  return {
    userId,
    tenantId,
    email: first.email,
    emailVerified: first.email_verified,
    roles: roles.sort(),
    permissions,
    sessionGeneration: first.account_sessions + first.member_sessions,
  };
};

/**
 * The events that change an access, and whose cached access each one drops (identity's read models
 * are inline, so the change is readable once they commit): account events concern the user in
 * every tenant, role definition events every member of the tenant, membership events the user in
 * one tenant.
 */
export const ACCESS_EVENTS = {
  'auth.user.email_verified': 'user',
  'auth.user.password_changed': 'user',
  'auth.user.locked': 'user',
  'auth.user.unlocked': 'user',
  'auth.user.profile_updated': 'user',
  'auth.member.added': 'member',
  'auth.role.changed': 'member',
  'auth.member.deleted': 'member',
  'auth.member.restored': 'member',
  'auth.member.status_changed': 'member',
  'auth.role.updated': 'tenant',
  'auth.role.deleted': 'tenant',
} as const satisfies Record<string, 'user' | 'tenant' | 'member'>;

/** the tokens identity issues: iss = {root_url}/v1, aud = platform; none lives longer than an impersonation */
export const tokenSettings = (rootUrl: string) => ({
  issuer: `${rootUrl}/v1`,
  audience: 'platform',
  maxTokenLifetimeSeconds: LIFETIMES.impersonationSeconds,
  refreshGraceMs: LIFETIMES.refreshGraceMs,
  accessEvents: ACCESS_EVENTS,
});
