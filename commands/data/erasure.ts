import { ERASURE_RULES } from '../../domain/shared/erasure';
import type { Eraser } from '../../infra/erasure';
import { deleteTenantRows, deleteTenantStreams } from '../../infra/erasure';
import { inTransaction, pgErrorCode } from '../../infra/postgres/db';
import type { Queryable } from '../../infra/postgres/db';
import { dataContext, moduleRegistryChanged } from './context';
import { asTenant } from './tenant-scope';

const FOREIGN_KEY_VIOLATION = '23503';

/** every generated table of every module (module_<slug>.<model>), each with its tenant_id */
const moduleTables = async (q: Queryable): Promise<string[]> => {
  const { rows } = await q.query<{ name: string }>(
    `SELECT format('%I.%I', c.table_schema, c.table_name) AS name FROM information_schema.columns c
     JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
     WHERE c.table_schema LIKE 'module\\_%' AND c.column_name = 'tenant_id' AND t.table_type = 'BASE TABLE'
     ORDER BY 1`,
  );
  return rows.map((r) => r.name);
};

/**
 * The tenant's rows of every module's tables. Relations between a module's models may refuse a
 * parent's deletion while a child remains: a refused table waits for the next pass (a savepoint
 * keeps the transaction usable), so any order of the relations ends empty.
 */
const deleteModuleRows = async (tx: Queryable, tenantId: string): Promise<void> => {
  let left = await moduleTables(tx);
  while (left.length) {
    const refused: string[] = [];
    for (const table of left) {
      await tx.query('SAVEPOINT erase_table');
      try {
        await tx.query(`DELETE FROM ${table} WHERE tenant_id = $1`, [tenantId]);
        await tx.query('RELEASE SAVEPOINT erase_table');
      } catch (error) {
        await tx.query('ROLLBACK TO SAVEPOINT erase_table');
        if (pgErrorCode(error) !== FOREIGN_KEY_VIOLATION) throw error;
        refused.push(table);
      }
    }
    if (refused.length === left.length)
      throw new Error(`module rows of ${tenantId} cannot be deleted: ${refused.join(', ')}`);
    left = refused;
  }
};

/**
 * The data layer's rule (README, Termination): in deleting_records, the tenant's rows in every
 * module's tables, its record streams (what a rebuild would bring back) and its installations of
 * modules. The modules themselves (the registry's, shared by every tenant) stay.
 */
export const dataEraser: Eraser = {
  domain: 'data',
  phase: ERASURE_RULES.data,
  erase: async (kernel, tenantId) => {
    await inTransaction(kernel.db, async (tx) => {
      // as the tenant (the data role and its row-level security): nothing of another tenant can go
      const useRole = await dataContext(kernel).useRole();
      await asTenant(tx, tenantId, useRole, () => deleteModuleRows(tx, tenantId));
      // record streams are named data:<tenant>:<module>.<model>.<id> (commands/data/aggregates.ts)
      await deleteTenantStreams(tx, tenantId, ['data']);
      await deleteTenantRows(tx, tenantId, ['modules.installations']);
    });
    // the tenant's installations are gone: no process serves its cached module rows any more
    await moduleRegistryChanged(kernel);
  },
};
