import type { Queryable } from '../../infra/postgres/db';

/**
 * What the registry's and the bus's commands read of the registry (rm.modules, inline: exact in the
 * command's transaction): the read side's queries, the one copy — re-exported here, the port other
 * contexts' commands (the bus) read the registry through.
 */
export { allManifests, findModule } from '../../projections/modules/queries';

/**
 * Whether a tenant exists: a row of identity's tenants (rm.iam_tenants). A platform without the
 * identity service has no registry of tenants (its tokens name them), so every tenant counts there.
 */
export const tenantExists = async (q: Queryable, tenantId: string): Promise<boolean> => {
  const registry = await q.query<{ known: string | null }>("SELECT to_regclass('rm.iam_tenants')::text AS known");
  if (!registry.rows[0]?.known) return true;
  return ((await q.query('SELECT 1 FROM rm.iam_tenants WHERE tenant_id = $1', [tenantId])).rowCount ?? 0) > 0;
};
