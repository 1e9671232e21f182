import type { MemberAccess } from '../../domain/identity/access';
import { accessOf } from '../../domain/identity/access';
import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { RoleRecord } from '../../domain/identity/views';
import type { Kernel } from '../../infra/kernel';
import type { Queryable } from '../../infra/postgres/db';
import { accessRows } from '../../projections/identity/queries';

/**
 * What the identity commands read of identity's read models that no read route asks (inline:
 * committed with the events, so exact inside the command's transaction when `q` is its `uow.tx`).
 * What the read side asks too (findUser, findRole, tenantsOfUser, providerLinks, a member's access)
 * the commands read through projections/identity/queries.ts, the one copy.
 */

export interface AccountRecord {
  id: string;
  email: string;
  first_name: string;
  last_name: string;
  email_verified: boolean;
  mfa_enabled: boolean;
  status: string;
}
export interface TenantRecord {
  tenant_id: string;
  name: string;
  slug: string;
  owner_id: string;
  owner_role_id: string;
}

export const findAccount = async (q: Queryable, userId: string): Promise<AccountRecord | null> =>
  (
    await q.query<AccountRecord>(
      'SELECT id, email, first_name, last_name, email_verified, mfa_enabled, status FROM rm.iam_accounts WHERE tenant_id = $1 AND id = $2',
      [PLATFORM_TENANT_ID, userId],
    )
  ).rows[0] ?? null;

export const findRolesByName = async (q: Queryable, tenantId: string, names: string[]): Promise<RoleRecord[]> =>
  (await q.query<RoleRecord>('SELECT * FROM rm.iam_roles WHERE tenant_id = $1 AND name = ANY ($2)', [tenantId, names]))
    .rows;

export const countRoles = async (q: Queryable, tenantId: string): Promise<number> =>
  Number(
    (await q.query<{ n: string }>('SELECT count(*) AS n FROM rm.iam_roles WHERE tenant_id = $1', [tenantId])).rows[0]
      ?.n ?? 0,
  );

/** another role of the tenant has this name (case-insensitive) */
export const roleNameTaken = async (q: Queryable, tenantId: string, name: string, except?: string): Promise<boolean> =>
  (
    await q.query('SELECT 1 FROM rm.iam_roles WHERE tenant_id = $1 AND lower(name) = lower($2) AND id <> $3', [
      tenantId,
      name,
      except ?? '',
    ])
  ).rowCount !== 0;

export const findTenant = async (q: Queryable, tenantId: string): Promise<TenantRecord | null> =>
  (await q.query<TenantRecord>('SELECT * FROM rm.iam_tenants WHERE tenant_id = $1', [tenantId])).rows[0] ?? null;

export const findTenantBySlug = async (q: Queryable, slug: string): Promise<TenantRecord | null> =>
  (await q.query<TenantRecord>('SELECT * FROM rm.iam_tenants WHERE slug = $1', [slug])).rows[0] ?? null;

/** emails of the owners (Owner role holders) of the given tenants */
export const ownerEmails = async (q: Queryable, tenantIds: string[]): Promise<string[]> =>
  (
    await q.query<{ email: string }>(
      `SELECT DISTINCT a.email FROM rm.iam_members m JOIN rm.iam_roles r ON r.tenant_id = m.tenant_id AND r.id = ANY (m.role_ids) AND r.built_in
       JOIN rm.iam_accounts a ON a.tenant_id = '${PLATFORM_TENANT_ID}' AND a.id = m.user_id
      WHERE m.tenant_id = ANY ($1) AND m.status = 'active'`,
      [tenantIds],
    )
  ).rows.map((r) => r.email);

/** the tenant's active Owners: the built-in Owner role, an active membership and an active account */
export const activeOwnerIds = async (q: Queryable, tenantId: string): Promise<string[]> =>
  (
    await q.query<{ user_id: string }>(
      `SELECT m.user_id FROM rm.iam_members m
       JOIN rm.iam_roles r ON r.tenant_id = m.tenant_id AND r.id = ANY (m.role_ids) AND r.built_in
       JOIN rm.iam_accounts a ON a.tenant_id = '${PLATFORM_TENANT_ID}' AND a.id = m.user_id AND a.status = 'active'
      WHERE m.tenant_id = $1 AND m.status = 'active'`,
      [tenantId],
    )
  ).rows.map((r) => r.user_id);

/** whether the account is or was (soft-deleted memberships count) a member of any tenant but this one */
export const memberElsewhere = async (q: Queryable, userId: string, tenantId: string): Promise<boolean> =>
  (await q.query('SELECT 1 FROM rm.iam_members WHERE user_id = $1 AND tenant_id <> $2 LIMIT 1', [userId, tenantId]))
    .rowCount !== 0;

/** the statuses of a user's memberships, in every tenant (why a login found no tenant to enter) */
export const membershipStatuses = async (q: Queryable, userId: string): Promise<string[]> =>
  (await q.query<{ status: string }>('SELECT status FROM rm.iam_members WHERE user_id = $1', [userId])).rows.map(
    (r) => r.status,
  );

/** the member of the tenant (deleted ones apart) whose account has this email */
export const memberByEmail = async (q: Queryable, tenantId: string, email: string): Promise<string | null> =>
  (
    await q.query<{ user_id: string }>(
      `SELECT m.user_id FROM rm.iam_members m JOIN rm.iam_accounts a ON a.tenant_id = $2 AND a.id = m.user_id
      WHERE m.tenant_id = $1 AND lower(a.email) = $3 AND m.status <> 'pending_deletion'`,
      [tenantId, PLATFORM_TENANT_ID, email],
    )
  ).rows[0]?.user_id ?? null;

/** the account, or its membership of the tenant, is locked (rather than gone) */
export const isLocked = async (q: Queryable, userId: string, tenantId: string): Promise<boolean> =>
  (
    await q.query(
      `SELECT 1 FROM rm.iam_accounts a LEFT JOIN rm.iam_members m ON m.tenant_id = $3 AND m.user_id = a.id
      WHERE a.tenant_id = $2 AND a.id = $1 AND (a.status = 'locked' OR m.status = 'locked')`,
      [userId, PLATFORM_TENANT_ID, tenantId],
    )
  ).rowCount !== 0;

/** the registered permission keys of the running platform (the built-in Owner role grants them all but the platform owner's) */
export const registeredPermissions = (kernel: Kernel): string[] => kernel.permissions.list().map((p) => p.key);

/**
 * The access of a user in a tenant, read in `q` (the read side's memberAccess: domain/identity/access.ts
 * maps the rows): the loader the identity runtime caches for every authenticated request
 * (projections/identity/shared/runtime.ts).
 */
export const loadAccess = async (
  kernel: Kernel,
  q: Queryable,
  userId: string,
  tenantId: string,
): Promise<MemberAccess | null> => {
  const rows = await accessRows(q, tenantId, userId);
  await kernel.permissions.current(); // a module's migration in another process may have changed them
  return accessOf(userId, tenantId, rows, registeredPermissions(kernel));
};

export const accessLoader = (kernel: Kernel) => (q: Queryable, userId: string, tenantId: string) =>
  loadAccess(kernel, q, userId, tenantId);

/** a tenant's pending invitations as billing counts them: the read side's count (the seat check and billing share it) */
export { pendingInvitations } from '../../projections/identity/queries';

/** the tenant's members billing counts: every membership not deleted (locked ones hold their seat) */
export const countedMembers = async (q: Queryable, tenantId: string): Promise<number> =>
  Number(
    (
      await q.query<{ n: string }>(
        "SELECT count(*) AS n FROM rm.iam_members WHERE tenant_id = $1 AND status <> 'pending_deletion'",
        [tenantId],
      )
    ).rows[0]?.n ?? 0,
  );

/** whether an invitation of this address to the tenant is pending (not accepted, not expired) */
export const invitationPending = async (q: Queryable, tenantId: string, email: string, now: Date): Promise<boolean> =>
  ((
    await q.query(
      `SELECT 1 FROM identity.one_time_tokens WHERE purpose = 'invite' AND tenant_id = $1 AND lower(email) = lower($2) AND expires_at > $3 LIMIT 1`,
      [tenantId, email, now],
    )
  ).rowCount ?? 0) > 0;
