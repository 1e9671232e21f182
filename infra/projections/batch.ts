import type { Tx } from '../postgres/db';
import { inline } from '../postgres/inline';
import type { Statement } from './projection';

/**
 * Executes a projection batch's statements in one round trip (one multi-statement query with the
 * values as escaped literals, inside a savepoint): catch-up and inline projections are bound by
 * round trips, not by PostgreSQL. Should a statement not survive inlining (a type PostgreSQL can
 * infer for a parameter but not for a bare literal), the batch is rolled back to the savepoint and
 * run statement by statement with bound parameters, so the result is the same either way.
 */
export const executeBatch = async (tx: Tx, statements: Statement[]): Promise<void> => {
  if (statements.length === 0) return;
  if (statements.length === 1) {
    await tx.query(statements[0]!.text, statements[0]!.values);
    return;
  }
  try {
    await tx.query(
      `SAVEPOINT projection_batch;\n${statements.map(inline).join(';\n')};\nRELEASE SAVEPOINT projection_batch`,
    );
  } catch {
    await tx.query('ROLLBACK TO SAVEPOINT projection_batch');
    for (const s of statements) await tx.query(s.text, s.values);
    await tx.query('RELEASE SAVEPOINT projection_batch');
  }
};
