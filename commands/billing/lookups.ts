import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { Queryable } from '../../infra/postgres/db';

/**
 * What billing needs to know about tenants, read from identity's read models (rm.iam_tenants,
 * rm.iam_accounts), never its streams: a port, so a platform without identity installs another.
 */
export interface TenantDirectory {
  exists(q: Queryable, tenantId: string): Promise<boolean>;
  /** tenants that have no subscription yet (those created before billing was deployed), oldest first */
  withoutSubscription(q: Queryable, limit: number): Promise<{ tenantId: string; createdAt: Date }[]>;
  /** where the tenant's notices go: its owner's email; null when unknown */
  noticeRecipient(q: Queryable, tenantId: string): Promise<string | null>;
}

/** identity's tenants; the platform pseudo-tenant is no customer and has no subscription */
export const identityTenants: TenantDirectory = {
  exists: async (q, tenantId) =>
    tenantId !== PLATFORM_TENANT_ID && ((await q.query('SELECT 1 FROM rm.iam_tenants WHERE tenant_id = $1', [tenantId])).rowCount ?? 0) > 0,
  withoutSubscription: async (q, limit) => (await q.query<{ tenant_id: string; created_at: Date }>(
    `SELECT t.tenant_id, t.created_at FROM rm.iam_tenants t
     WHERE t.tenant_id <> $1 AND NOT EXISTS (SELECT 1 FROM rm.billing_subscriptions s WHERE s.tenant_id = t.tenant_id)
     ORDER BY t.created_at LIMIT $2`, [PLATFORM_TENANT_ID, limit])).rows.map((r) => ({ tenantId: r.tenant_id, createdAt: r.created_at })),
  noticeRecipient: async (q, tenantId) => (await q.query<{ email: string }>(
    `SELECT a.email FROM rm.iam_tenants t JOIN rm.iam_accounts a ON a.tenant_id = $2 AND a.id = t.owner_id
     WHERE t.tenant_id = $1 AND a.email NOT LIKE '%.invalid'`, [tenantId, PLATFORM_TENANT_ID])).rows[0]?.email ?? null,
};
