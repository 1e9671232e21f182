import { OWNER_ROLE, PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { People } from '../../infra/people';
import { pendingInvitations } from './lookups';

/**
 * Identity's directory of people (infra/people.ts): the one place outside identity's own commands
 * and projections that reads its read models for another context — wallet owners (money),
 * recipients (notify), Owners of a tenant (files), admins (the bus's lag alerts), members and their
 * personal values (audit's anonymization and termination erasure), avatars (files' orphans),
 * tenants and their owners (billing, the module registry), seats held by invitations (billing).
 * Installed on the kernel by the composition root with identity's read models (app/services.ts).
 */
export const identityPeople: People = {
  isActiveMember: async (q, tenantId, userId) =>
    ((
      await q.query(
        `SELECT 1 FROM rm.iam_members m JOIN rm.iam_accounts a ON a.tenant_id = $3 AND a.id = m.user_id
         WHERE m.tenant_id = $1 AND m.user_id = $2 AND m.status = 'active' AND a.status = 'active'`,
        [tenantId, userId, PLATFORM_TENANT_ID],
      )
    ).rowCount ?? 0) > 0,

  addresses: async (q, tenantId, userIds) => {
    if (userIds.length === 0) return new Map();
    const { rows } = await q.query<{ user_id: string; email: string }>(
      `SELECT m.user_id, a.email FROM rm.iam_members m JOIN rm.iam_accounts a ON a.tenant_id = $3 AND a.id = m.user_id
       WHERE m.tenant_id = $1 AND m.user_id = ANY($2::text[]) AND m.status = 'active' AND a.status = 'active'`,
      [tenantId, [...new Set(userIds)], PLATFORM_TENANT_ID],
    );
    return new Map(rows.map((r) => [r.user_id, r.email]));
  },

  owners: async (q, tenantId) =>
    (
      await q.query<{ user_id: string; email: string }>(
        `SELECT DISTINCT m.user_id, a.email FROM rm.iam_members m
         JOIN rm.iam_roles r ON r.tenant_id = m.tenant_id AND r.id = ANY(m.role_ids) AND r.name = $2
         JOIN rm.iam_accounts a ON a.tenant_id = $3 AND a.id = m.user_id
         WHERE m.tenant_id = $1 AND m.status = 'active' AND a.status = 'active' ORDER BY a.email`,
        [tenantId, OWNER_ROLE, PLATFORM_TENANT_ID],
      )
    ).rows.map((r) => ({ userId: r.user_id, email: r.email })),

  adminAddresses: async (q, tenantId) =>
    (
      await q.query<{ email: string }>(
        `SELECT DISTINCT a.email FROM rm.iam_members m
         JOIN rm.iam_roles r ON r.tenant_id = m.tenant_id AND r.id = ANY (m.role_ids) AND r.built_in
         JOIN rm.iam_accounts a ON a.tenant_id = $2 AND a.id = m.user_id AND a.status = 'active'
         WHERE m.tenant_id = $1 AND m.status = 'active' ORDER BY a.email`,
        [tenantId, PLATFORM_TENANT_ID],
      )
    ).rows.map((r) => r.email),

  memberIds: async (q, tenantId) =>
    (
      await q.query<{ user_id: string }>(
        'SELECT DISTINCT user_id FROM rm.iam_members WHERE tenant_id = $1 ORDER BY user_id',
        [tenantId],
      )
    ).rows.map((r) => r.user_id),

  person: async (q, tenantId, userId) => {
    const {
      rows: [account],
    } = await q.query<{ email: string; first_name: string; last_name: string }>(
      'SELECT email, first_name, last_name FROM rm.iam_accounts WHERE tenant_id = $1 AND id = $2',
      [PLATFORM_TENANT_ID, userId],
    );
    if (!account) return null;
    const member =
      ((await q.query('SELECT 1 FROM rm.iam_members WHERE tenant_id = $1 AND user_id = $2', [tenantId, userId]))
        .rowCount ?? 0) > 0;
    const { rows: links } = await q.query<{ email: string; display_name: string }>(
      'SELECT email, display_name FROM rm.iam_provider_links WHERE tenant_id = $1 AND user_id = $2',
      [PLATFORM_TENANT_ID, userId],
    );
    const names = [account.first_name, account.last_name, `${account.first_name} ${account.last_name}`];
    return { member, values: [account.email, ...names, ...links.flatMap((l) => [l.email, l.display_name])] };
  },

  avatarsInUse: async (q, tenantId, fileIds) => {
    if (fileIds.length === 0) return new Set();
    const { rows } = await q.query<{ id: string }>(
      `SELECT f.id FROM unnest($2::text[]) AS f(id)
       WHERE EXISTS (SELECT 1 FROM rm.iam_members m JOIN rm.iam_accounts a ON a.tenant_id = $3 AND a.id = m.user_id
                     WHERE m.tenant_id = $1 AND strpos(a.avatar_url, f.id) > 0)`,
      [tenantId, fileIds, PLATFORM_TENANT_ID],
    );
    return new Set(rows.map((r) => r.id));
  },

  tenantExists: async (q, tenantId) =>
    ((await q.query('SELECT 1 FROM rm.iam_tenants WHERE tenant_id = $1', [tenantId])).rowCount ?? 0) > 0,

  tenants: async (q, after, limit) =>
    (
      await q.query<{ tenant_id: string; created_at: Date }>(
        `SELECT tenant_id, created_at FROM rm.iam_tenants
         WHERE tenant_id <> $1 AND ($2::timestamptz IS NULL OR (created_at, tenant_id) > ($2::timestamptz, $3::text))
         ORDER BY created_at, tenant_id LIMIT $4`,
        [PLATFORM_TENANT_ID, after?.createdAt ?? null, after?.tenantId ?? '', limit],
      )
    ).rows.map((r) => ({ tenantId: r.tenant_id, createdAt: r.created_at })),

  // an address of the reserved .invalid domain (RFC 2606) receives nothing: no notice goes there
  ownerAddress: async (q, tenantId) =>
    (
      await q.query<{ email: string }>(
        `SELECT a.email FROM rm.iam_tenants t JOIN rm.iam_accounts a ON a.tenant_id = $2 AND a.id = t.owner_id
         WHERE t.tenant_id = $1 AND a.email NOT LIKE '%.invalid'`,
        [tenantId, PLATFORM_TENANT_ID],
      )
    ).rows[0]?.email ?? null,

  pendingInvitations,
};
