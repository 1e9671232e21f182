import type pg from 'pg';
import type { Tx } from './db';
import type { BoundStatement } from './inline';

/** a statement without values (BEGIN, SAVEPOINT …, COMMIT) */
export const statement = (text: string): BoundStatement => ({ text, values: [] });

/**
 * Sends statements back to back in one round trip, each with its values bound, and answers their
 * results in order. pg's pipeline mode (pg ≥ 8.23: Client#pipeline) writes every statement before
 * the first answer is read; each ends with its own Sync, so inside a transaction block a failed
 * statement aborts the block and those after it fail too ("current transaction is aborted") — a
 * COMMIT among them rolls back — and the first failure is thrown once all have answered. The mode
 * is the client's only for the call: the client is the caller's (a transaction's), so nothing
 * else writes to it meanwhile.
 */
export const pipelined = async (client: Tx, statements: readonly BoundStatement[]): Promise<pg.QueryResult[]> => {
  const c = client as Tx & { pipeline: boolean };
  c.pipeline = true;
  try {
    const settled = await Promise.allSettled(
      statements.map((s) =>
        s.name ? client.query({ name: s.name, text: s.text, values: s.values }) : client.query(s.text, s.values),
      ),
    );
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    return settled.map((r) => (r as PromiseFulfilledResult<pg.QueryResult>).value);
  } finally {
    c.pipeline = false;
  }
};

/**
 * A statement prepared under `name` on each connection the first time it runs there: parsed and
 * planned once, then only bound and executed (PostgreSQL re-plans it itself when a table it reads
 * changes). For the statements a hot path sends on every request or batch; the text must be fixed.
 */
export const prepared =
  (name: string, text: string) =>
  (values: unknown[]): BoundStatement & { name: string } => ({ name, text, values });
