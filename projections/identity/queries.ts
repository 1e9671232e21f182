import { PLATFORM_ONLY_PERMISSIONS } from '../../domain/identity/authority';
import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { Queryable } from '../../infra/postgres/db';

/** Typed queries over the identity read models. Every one filters by tenant (accounts: the platform pseudo-tenant). */
export interface UserRow {
  id: string; email: string; first_name: string; last_name: string; avatar_url: string; email_verified: boolean; mfa_enabled: boolean;
  account_status: string; member_status: string; deleted_at: Date | null; created_at: Date; updated_at: Date; tenant_id: string; role_ids: string[]; roles: string[];
}

const USER_SELECT = `SELECT a.id, a.email, a.first_name, a.last_name, a.avatar_url, a.email_verified, a.mfa_enabled, a.status AS account_status,
    m.status AS member_status, m.deleted_at, m.created_at, GREATEST(a.updated_at, m.updated_at) AS updated_at, m.tenant_id, m.role_ids,
    COALESCE((SELECT array_agg(r.name ORDER BY r.name) FROM rm.iam_roles r WHERE r.tenant_id = m.tenant_id AND r.id = ANY (m.role_ids)), '{}') AS roles
  FROM rm.iam_members m JOIN rm.iam_accounts a ON a.tenant_id = '${PLATFORM_TENANT_ID}' AND a.id = m.user_id`;

export const userStatus = (row: Pick<UserRow, 'account_status' | 'member_status'>): string =>
  row.member_status === 'pending_deletion' ? 'pending_deletion' : row.account_status === 'locked' ? 'locked' : row.member_status;

export const toUser = (row: UserRow) => ({
  id: row.id, email: row.email, firstName: row.first_name, lastName: row.last_name, avatarUrl: row.avatar_url, tenantId: row.tenant_id,
  roles: row.roles, emailVerified: row.email_verified, mfaEnabled: row.mfa_enabled, status: userStatus(row),
  createdAt: row.created_at.toISOString(), updatedAt: row.updated_at.toISOString(), deletedAt: row.deleted_at ? row.deleted_at.toISOString() : null,
});
export type UserView = ReturnType<typeof toUser>;

export const findUser = async (q: Queryable, tenantId: string, userId: string): Promise<UserRow | null> =>
  (await q.query<UserRow>(`${USER_SELECT} WHERE m.tenant_id = $1 AND m.user_id = $2`, [tenantId, userId])).rows[0] ?? null;

export const listUsers = async (q: Queryable, tenantId: string, o: { after: string; limit: number; includeDeleted: boolean }): Promise<UserRow[]> =>
  (await q.query<UserRow>(`${USER_SELECT} WHERE m.tenant_id = $1 AND m.user_id > $2 AND ($3 OR m.status <> 'pending_deletion') ORDER BY m.user_id LIMIT $4`,
    [tenantId, o.after, o.includeDeleted, o.limit])).rows;

export interface AccountRow { id: string; email: string; first_name: string; last_name: string; email_verified: boolean; mfa_enabled: boolean; status: string }
export const findAccount = async (q: Queryable, userId: string): Promise<AccountRow | null> =>
  (await q.query<AccountRow>('SELECT id, email, first_name, last_name, email_verified, mfa_enabled, status FROM rm.iam_accounts WHERE tenant_id = $1 AND id = $2', [PLATFORM_TENANT_ID, userId])).rows[0] ?? null;
export const findAccountByEmail = async (q: Queryable, email: string): Promise<AccountRow | null> =>
  (await q.query<AccountRow>('SELECT id, email, first_name, last_name, email_verified, mfa_enabled, status FROM rm.iam_accounts WHERE tenant_id = $1 AND lower(email) = lower($2)', [PLATFORM_TENANT_ID, email])).rows[0] ?? null;

export interface RoleRow { id: string; name: string; description: string; permissions: string[]; built_in: boolean; created_by: string; created_at: Date; tenant_id: string }
/** what the built-in Owner role of a tenant grants: every registered permission but the platform owner's (modules added later included) */
export const ownerGrants = (registered: readonly string[]): string[] => registered.filter((key) => !PLATFORM_ONLY_PERMISSIONS.has(key));

/** a role as shown; `registered` are the permission keys of the running platform (the Owner role is shown as it grants) */
export const toRole = (r: RoleRow, registered: readonly string[]) => ({
  id: r.id, name: r.name, description: r.description, permissions: r.built_in && r.tenant_id !== PLATFORM_TENANT_ID ? ownerGrants(registered) : r.permissions,
  tenantId: r.tenant_id, createdBy: r.created_by, createdAt: r.created_at.toISOString(), builtIn: r.built_in,
});
export const findRole = async (q: Queryable, tenantId: string, roleId: string): Promise<RoleRow | null> =>
  (await q.query<RoleRow>('SELECT * FROM rm.iam_roles WHERE tenant_id = $1 AND id = $2', [tenantId, roleId])).rows[0] ?? null;
export const findRolesByName = async (q: Queryable, tenantId: string, names: string[]): Promise<RoleRow[]> =>
  (await q.query<RoleRow>('SELECT * FROM rm.iam_roles WHERE tenant_id = $1 AND name = ANY ($2)', [tenantId, names])).rows;
export const listRoles = async (q: Queryable, tenantId: string, o: { after: string; limit: number }): Promise<RoleRow[]> =>
  (await q.query<RoleRow>('SELECT * FROM rm.iam_roles WHERE tenant_id = $1 AND id > $2 ORDER BY id LIMIT $3', [tenantId, o.after, o.limit])).rows;
export const countRoles = async (q: Queryable, tenantId: string): Promise<number> =>
  Number((await q.query<{ n: string }>('SELECT count(*) AS n FROM rm.iam_roles WHERE tenant_id = $1', [tenantId])).rows[0]?.n ?? 0);

export interface TenantChoice { id: string; name: string; logoUrl: string; role: string }
/** the tenants where a user is an active member (login across tenants: the one query not scoped to a tenant) */
export const tenantsOfUser = async (q: Queryable, userId: string): Promise<TenantChoice[]> =>
  (await q.query<{ tenant_id: string; name: string; role: string | null }>(
    `SELECT m.tenant_id, t.name,
       (SELECT r.name FROM rm.iam_roles r WHERE r.tenant_id = m.tenant_id AND r.id = ANY (m.role_ids) ORDER BY r.built_in DESC, r.name LIMIT 1) AS role
       FROM rm.iam_members m JOIN rm.iam_tenants t ON t.tenant_id = m.tenant_id
      WHERE m.user_id = $1 AND m.status = 'active' ORDER BY t.name, m.tenant_id`, [userId])).rows
    .map((r) => ({ id: r.tenant_id, name: r.name, logoUrl: '', role: r.role ?? '' }));

export interface TenantRow { tenant_id: string; name: string; slug: string; owner_id: string; owner_role_id: string }
export const findTenant = async (q: Queryable, tenantId: string): Promise<TenantRow | null> =>
  (await q.query<TenantRow>('SELECT * FROM rm.iam_tenants WHERE tenant_id = $1', [tenantId])).rows[0] ?? null;
export const findTenantBySlug = async (q: Queryable, slug: string): Promise<TenantRow | null> =>
  (await q.query<TenantRow>('SELECT * FROM rm.iam_tenants WHERE slug = $1', [slug])).rows[0] ?? null;

/** emails of the owners (Owner role holders) of the given tenants */
export const ownerEmails = async (q: Queryable, tenantIds: string[]): Promise<string[]> =>
  (await q.query<{ email: string }>(
    `SELECT DISTINCT a.email FROM rm.iam_members m JOIN rm.iam_roles r ON r.tenant_id = m.tenant_id AND r.id = ANY (m.role_ids) AND r.built_in
       JOIN rm.iam_accounts a ON a.tenant_id = '${PLATFORM_TENANT_ID}' AND a.id = m.user_id
      WHERE m.tenant_id = ANY ($1) AND m.status = 'active'`, [tenantIds])).rows.map((r) => r.email);

export const providerLinks = async (q: Queryable, userId: string) =>
  (await q.query<{ id: string; provider_id: string; provider_type: string; external_id: string; email: string; display_name: string; linked_at: Date }>(
    'SELECT * FROM rm.iam_provider_links WHERE tenant_id = $1 AND user_id = $2 ORDER BY linked_at, id', [PLATFORM_TENANT_ID, userId])).rows
    .map((r) => ({ id: r.id, providerId: r.provider_id, providerType: r.provider_type, externalId: r.external_id, email: r.email, displayName: r.display_name, linkedAt: r.linked_at.toISOString() }));

/** the tenant's active Owners: the built-in Owner role, an active membership and an active account */
export const activeOwnerIds = async (q: Queryable, tenantId: string): Promise<string[]> =>
  (await q.query<{ user_id: string }>(
    `SELECT m.user_id FROM rm.iam_members m
       JOIN rm.iam_roles r ON r.tenant_id = m.tenant_id AND r.id = ANY (m.role_ids) AND r.built_in
       JOIN rm.iam_accounts a ON a.tenant_id = '${PLATFORM_TENANT_ID}' AND a.id = m.user_id AND a.status = 'active'
      WHERE m.tenant_id = $1 AND m.status = 'active'`, [tenantId])).rows.map((r) => r.user_id);

/** whether the account is or was (soft-deleted memberships count) a member of any tenant but this one */
export const memberElsewhere = async (q: Queryable, userId: string, tenantId: string): Promise<boolean> =>
  (await q.query('SELECT 1 FROM rm.iam_members WHERE user_id = $1 AND tenant_id <> $2 LIMIT 1', [userId, tenantId])).rowCount !== 0;

/** the statuses of a user's memberships, in every tenant (why a login found no tenant to enter) */
export const membershipStatuses = async (q: Queryable, userId: string): Promise<string[]> =>
  (await q.query<{ status: string }>('SELECT status FROM rm.iam_members WHERE user_id = $1', [userId])).rows.map((r) => r.status);
