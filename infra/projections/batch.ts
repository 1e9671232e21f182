import { createHash } from 'node:crypto';
import type { Tx } from '../postgres/db';
import type { BoundStatement } from '../postgres/inline';
import { pipelined } from '../postgres/pipeline';
import type { Statement } from './projection';

/**
 * Executes a projection batch's statements in one round trip: pipelined, each with its values
 * bound (infra/postgres/pipeline.ts). Catch-up and inline projections are bound by round trips and
 * by PostgreSQL parsing and planning one statement per event, not by executing them: a statement
 * text that occurs more than once in the batch (one evolve per event) is sent as a prepared
 * statement, parsed and planned once per connection and then only bound and executed. That halved
 * PostgreSQL's CPU per event of a catch-up against one multi-statement query with the values
 * written in as literals (BENCHMARKS.md, issue 25).
 *
 * A failed statement aborts the caller's transaction (the statements after it fail too) and is
 * thrown, as a single statement's failure would be.
 */
export const executeBatch = async (tx: Tx, statements: Statement[]): Promise<void> => {
  if (statements.length === 0) return;
  if (statements.length === 1) {
    await tx.query(statements[0]!.text, statements[0]!.values);
    return;
  }
  const repeated = new Map<string, number>();
  for (const s of statements) repeated.set(s.text, (repeated.get(s.text) ?? 0) + 1);
  await pipelined(
    tx,
    statements.map((s): BoundStatement => {
      const name = repeated.get(s.text)! > 1 ? preparedName(s.text) : undefined;
      return name ? { ...s, name } : s;
    }),
  );
};

/**
 * At most this many statement texts are prepared by a process: each is kept by every connection
 * that ran it (PostgreSQL holds the plan, pg the name) for the connection's life. Projections'
 * per-event statements are a handful of texts per table and generation; a text made per batch (a
 * VALUES list of the batch's length) occurs once in its batch and is not prepared at all.
 */
const MAX_PREPARED = 500;
const prepared = new Map<string, string>();

/** the prepared statement's name for a text (a digest: pg refuses one name for two texts), or none past the bound */
const preparedName = (text: string): string | undefined => {
  const known = prepared.get(text);
  if (known || prepared.size >= MAX_PREPARED) return known;
  const name = `projection_${createHash('sha1').update(text).digest('base64url')}`;
  prepared.set(text, name);
  return name;
};
