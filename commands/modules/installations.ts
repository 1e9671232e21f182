import type { Queryable } from '../../infra/postgres/db';

/**
 * The tenants a module is installed for (modules.installations). A module key acts only for an
 * active installation's tenant. The data-model layer's install, activate and deactivate write these
 * rows (with the module's migrations); until then an operator records them with recordInstallation.
 */
export type InstallationStatus = 'active' | 'inactive';

export const recordInstallation = async (q: Queryable, moduleId: string, tenantId: string, status: InstallationStatus, at: Date): Promise<void> => {
  await q.query(`INSERT INTO modules.installations (module_id, tenant_id, status, installed_at, updated_at) VALUES ($1, $2, $3, $4, $4)
    ON CONFLICT (module_id, tenant_id) DO UPDATE SET status = EXCLUDED.status, updated_at = EXCLUDED.updated_at`, [moduleId, tenantId, status, at]);
};

/** the tenants where the module is active */
export const activeTenantsOf = async (q: Queryable, moduleId: string): Promise<string[]> =>
  (await q.query<{ tenant_id: string }>(`SELECT tenant_id FROM modules.installations WHERE module_id = $1 AND status = 'active' ORDER BY tenant_id`, [moduleId])).rows.map((r) => r.tenant_id);
