import type { AccessRow, MemberAccess } from '../../domain/identity/access';
import { accessOf } from '../../domain/identity/access';
import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type {
  ProviderLinkRecord,
  ProviderLinkView,
  RoleRecord,
  TenantChoice,
  UserRecord,
} from '../../domain/identity/views';
import { toProviderLink } from '../../domain/identity/views';
import type { Queryable } from '../../infra/postgres/db';

/**
 * Typed queries over the identity read models, for the read API and for identity's commands (in
 * the command's transaction: the read models are inline). Every one filters by tenant (accounts:
 * the platform pseudo-tenant); rows map through domain/identity.
 */
const USER_SELECT = `SELECT a.id, a.email, a.first_name, a.last_name, a.avatar_url, a.email_verified, a.mfa_enabled, a.status AS account_status,
    m.status AS member_status, m.deleted_at, m.created_at, GREATEST(a.updated_at, m.updated_at) AS updated_at, m.tenant_id, m.role_ids,
    COALESCE((SELECT array_agg(r.name ORDER BY r.name) FROM rm.iam_roles r WHERE r.tenant_id = m.tenant_id AND r.id = ANY (m.role_ids)), '{}') AS roles
  FROM rm.iam_members m JOIN rm.iam_accounts a ON a.tenant_id = '${PLATFORM_TENANT_ID}' AND a.id = m.user_id`;

export const findUser = async (q: Queryable, tenantId: string, userId: string): Promise<UserRecord | null> =>
  (await q.query<UserRecord>(`${USER_SELECT} WHERE m.tenant_id = $1 AND m.user_id = $2`, [tenantId, userId])).rows[0] ??
  null;

export const listUsers = async (
  q: Queryable,
  tenantId: string,
  o: { after: string; limit: number; includeDeleted: boolean },
): Promise<UserRecord[]> =>
  (
    await q.query<UserRecord>(
      `${USER_SELECT} WHERE m.tenant_id = $1 AND m.user_id > $2 AND ($3 OR m.status <> 'pending_deletion') ORDER BY m.user_id LIMIT $4`,
      [tenantId, o.after, o.includeDeleted, o.limit],
    )
  ).rows;

export const findRole = async (q: Queryable, tenantId: string, roleId: string): Promise<RoleRecord | null> =>
  (await q.query<RoleRecord>('SELECT * FROM rm.iam_roles WHERE tenant_id = $1 AND id = $2', [tenantId, roleId]))
    .rows[0] ?? null;

export const listRoles = async (
  q: Queryable,
  tenantId: string,
  o: { after: string; limit: number },
): Promise<RoleRecord[]> =>
  (
    await q.query<RoleRecord>('SELECT * FROM rm.iam_roles WHERE tenant_id = $1 AND id > $2 ORDER BY id LIMIT $3', [
      tenantId,
      o.after,
      o.limit,
    ])
  ).rows;

/** the tenants where a user is an active member */
export const tenantsOfUser = async (q: Queryable, userId: string): Promise<TenantChoice[]> =>
  (
    await q.query<{ tenant_id: string; name: string; role: string | null }>(
      `SELECT m.tenant_id, t.name,
       (SELECT r.name FROM rm.iam_roles r WHERE r.tenant_id = m.tenant_id AND r.id = ANY (m.role_ids) ORDER BY r.built_in DESC, r.name LIMIT 1) AS role
       FROM rm.iam_members m JOIN rm.iam_tenants t ON t.tenant_id = m.tenant_id
      WHERE m.user_id = $1 AND m.status = 'active' ORDER BY t.name, m.tenant_id`,
      [userId],
    )
  ).rows.map((r) => ({ id: r.tenant_id, name: r.name, logoUrl: '', role: r.role ?? '' }));

export const providerLinks = async (q: Queryable, userId: string): Promise<ProviderLinkView[]> =>
  (
    await q.query<ProviderLinkRecord>(
      'SELECT * FROM rm.iam_provider_links WHERE tenant_id = $1 AND user_id = $2 ORDER BY linked_at, id',
      [PLATFORM_TENANT_ID, userId],
    )
  ).rows.map(toProviderLink);

/** the rows a member's access is mapped from (domain/identity/access.ts): one per role held */
export const accessRows = async (q: Queryable, tenantId: string, userId: string): Promise<AccessRow[]> =>
  (
    await q.query<AccessRow>(
      `SELECT a.email, a.email_verified, a.status AS account_status, m.status AS member_status, r.name, r.permissions, r.built_in,
            a.session_generation AS account_sessions, m.session_generation AS member_sessions
       FROM rm.iam_members m
       JOIN rm.iam_accounts a ON a.tenant_id = $3 AND a.id = m.user_id
       LEFT JOIN rm.iam_roles r ON r.tenant_id = m.tenant_id AND r.id = ANY (m.role_ids)
      WHERE m.tenant_id = $1 AND m.user_id = $2`,
      [tenantId, userId, PLATFORM_TENANT_ID],
    )
  ).rows;

/**
 * What a member may do in the tenant (GET /users/:id, GET /rbac/users/:id/permissions), mapped as
 * the authenticator maps it (domain/identity/access.ts; commands/identity/lookups.ts loadAccess
 * reads the same rows); null when the account or the membership is not active. `registered` are
 * the permission keys of the running platform.
 */
export const memberAccess = async (
  q: Queryable,
  tenantId: string,
  userId: string,
  registered: readonly string[],
): Promise<MemberAccess | null> => accessOf(userId, tenantId, await accessRows(q, tenantId, userId), registered);

/**
 * How many unused recovery codes the user has: read from identity's operational table
 * (identity.recovery_codes, which no event describes — the codes are secrets), the one read of
 * the read API outside the read models.
 */
export const remainingRecoveryCodes = async (q: Queryable, userId: string): Promise<number> =>
  Number(
    (
      await q.query<{ n: string }>(
        'SELECT count(*) AS n FROM identity.recovery_codes WHERE user_id = $1 AND used_at IS NULL',
        [userId],
      )
    ).rows[0]?.n ?? 0,
  );

/**
 * A tenant's pending invitations as billing counts them (spec 001 users = members plus pending
 * invitations), the one count every reader shares (the read API's usage, CheckLimit, identity's
 * seat check): distinct addresses invited and not yet accepted nor expired, other than those of
 * counted members (a re-sent invitation, an address that joined by another way). Reads
 * identity's operational table of one-time tokens beside the read models.
 */
export const pendingInvitations = async (q: Queryable, tenantId: string, now: Date): Promise<number> =>
  Number(
    (
      await q.query<{ n: string }>(
        `SELECT count(DISTINCT lower(o.email))::text AS n FROM identity.one_time_tokens o
  WHERE o.purpose = 'invite' AND o.tenant_id = $1 AND o.expires_at > $2 AND o.email IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM rm.iam_members m JOIN rm.iam_accounts a ON a.tenant_id = $3 AND a.id = m.user_id
      WHERE m.tenant_id = $1 AND m.status <> 'pending_deletion' AND lower(a.email) = lower(o.email))`,
        [tenantId, now, PLATFORM_TENANT_ID],
      )
    ).rows[0]?.n ?? 0,
  );
