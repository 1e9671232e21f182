import { billingErrors } from '../../domain/billing/errors';
import { PLATFORM_DOMAINS } from '../../domain/modules/manifest';
import type { Kernel } from '../../infra/kernel';
import type { Queryable } from '../../infra/postgres/db';
import { cachedModuleRowOf } from '../data/context';

/**
 * The tenants a module is installed for (modules.installations). A module key acts only for an
 * active installation's tenant. The data-model layer's install, activate and deactivate write these
 * rows (with the module's migrations); until then an operator records them with recordInstallation.
 */
export type InstallationStatus = 'active' | 'inactive';

export const recordInstallation = async (
  q: Queryable,
  moduleId: string,
  tenantId: string,
  status: InstallationStatus,
  at: Date,
): Promise<void> => {
  await q.query(
    `INSERT INTO modules.installations (module_id, tenant_id, status, installed_at, updated_at) VALUES ($1, $2, $3, $4, $4)
    ON CONFLICT (module_id, tenant_id) DO UPDATE SET status = EXCLUDED.status, updated_at = EXCLUDED.updated_at`,
    [moduleId, tenantId, status, at],
  );
};

/** the tenants where the module is active */
export const activeTenantsOf = async (q: Queryable, moduleId: string): Promise<string[]> =>
  (
    await q.query<{ tenant_id: string }>(
      `SELECT tenant_id FROM modules.installations WHERE module_id = $1 AND status = 'active' ORDER BY tenant_id`,
      [moduleId],
    )
  ).rows.map((r) => r.tenant_id);

/**
 * The gateway's module check (spec 000: 404 module-not-found): installed when the module is
 * registered, not deleted, and active for the tenant; unknown when no module has that slug (a
 * platform service's namespace). The row is the data requests' own, from this process's cache of
 * module rows (projections/data/queries.ts ModuleRows): a data request reads none from PostgreSQL.
 */
export const moduleStatusOf = async (
  kernel: Kernel,
  tenantId: string,
  slug: string,
): Promise<'installed' | 'absent' | 'unknown'> => {
  // a platform service's namespace (money, notify, …) is never a module's slug: no lookup on their hot paths
  if (PLATFORM_DOMAINS.includes(slug)) return 'unknown';
  const row = await cachedModuleRowOf(kernel, slug, tenantId);
  if (!row) return 'unknown';
  return row.status === 'registered' && row.installation === 'active' ? 'installed' : 'absent';
};

/**
 * The modules limit of the tenant's plan (spec 001: max installed modules), held here under the
 * tenant's installation lock so that concurrent installations never overshoot: a module becoming
 * active for the tenant needs a free place among its other active installations.
 */
export const assertInstallationAllowed = async (
  q: Queryable,
  moduleId: string,
  tenantId: string,
  limit: number,
): Promise<void> => {
  if (limit === 0) return;
  await q.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`modules.installations:${tenantId}`]);
  const { rows } = await q.query<{ n: string; here: boolean }>(
    `SELECT count(*) FILTER (WHERE module_id <> $2) AS n, bool_or(module_id = $2) AS here
    FROM modules.installations WHERE tenant_id = $1 AND status = 'active'`,
    [tenantId, moduleId],
  );
  const others = Number(rows[0]?.n ?? 0);
  if (rows[0]?.here !== true && others + 1 > limit) throw billingErrors.planLimitExceeded('modules', others, limit);
};
