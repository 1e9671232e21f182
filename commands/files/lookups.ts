import { OWNER_ROLE, PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { Queryable } from '../../infra/postgres/db';

/**
 * Who hears about an infected upload: the tenant's Owners, read from identity's read models
 * (members, roles, accounts) — a port, so a files platform without identity installs another.
 */
export interface OwnerDirectory {
  ownerEmails(q: Queryable, tenantId: string): Promise<string[]>;
}

export const identityOwners: OwnerDirectory = {
  ownerEmails: async (q, tenantId) => (await q.query<{ email: string }>(
    `SELECT DISTINCT a.email FROM rm.iam_members m
       JOIN rm.iam_roles r ON r.tenant_id = m.tenant_id AND r.id = ANY(m.role_ids) AND r.name = $2
       JOIN rm.iam_accounts a ON a.tenant_id = $3 AND a.id = m.user_id
     WHERE m.tenant_id = $1 AND m.status = 'active' AND a.status = 'active' ORDER BY a.email`, [tenantId, OWNER_ROLE, PLATFORM_TENANT_ID])).rows.map((r) => r.email),
};
