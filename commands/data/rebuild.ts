import type { Model } from '../../domain/data/catalog';
import { RecordEvent } from '../../domain/data/record';
import { statementOf } from './statements';
import type { Kernel } from '../../infra/kernel';
import { inTransaction } from '../../infra/postgres/db';

/**
 * Rebuilds a generated model's table from the log: its rows are removed and every
 * data.<module>.<model>.* event is applied again in log order, in one transaction (readers see the
 * old rows until it commits). The table's rows are a function of the events: a rebuild gives them back.
 */
export const rebuildModelTable = async (kernel: Kernel, slug: string, m: Model): Promise<number> =>
  inTransaction(kernel.db, async (tx) => {
    await tx.query(`DELETE FROM "${m.schema}"."${m.table}"`);
    const prefix = `data.${slug}.${m.name}.`;
    const { rows } = await tx.query<{ type: string; data: Record<string, unknown>; tenant_id: string }>(
      `SELECT type, data, tenant_id FROM es.events WHERE type IN ($1, $2, $3) ORDER BY transaction_id, position`,
      [`${prefix}created`, `${prefix}updated`, `${prefix}deleted`],
    );
    for (const row of rows) {
      const s = statementOf(m, row.tenant_id, RecordEvent.parse({ type: row.type, data: row.data }), { replay: true });
      await tx.query(s.text, s.values);
    }
    return rows.length;
  });
