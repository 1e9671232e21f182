import type { Queryable } from '../../infra/postgres/db';
import { scopeToTenant } from './context';

/**
 * Runs statements on a module's tables as the tenant: the tenant setting the row-level security
 * policies compare with, and the data role (no BYPASSRLS) while they run, so that even a query
 * that forgot its tenant filter sees only the tenant's rows. The role is reset afterwards: the
 * event store's own writes in the same transaction run as the platform.
 */
export const asTenant = async <T>(
  tx: Queryable,
  tenantId: string,
  useRole: boolean,
  fn: () => Promise<T>,
): Promise<T> => {
  await scopeToTenant(tx, tenantId, useRole);
  try {
    return await fn();
  } finally {
    if (useRole) await tx.query('RESET ROLE').catch(() => undefined);
  }
};
