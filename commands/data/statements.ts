import type { Model } from '../../domain/data/catalog';
import { isJsonColumn } from '../../domain/data/validation';
import type { RecordEvent } from '../../domain/data/record';
import { verbOf } from '../../domain/data/record';

/**
 * The projection of record events onto the module's table: one statement per event, used inline by
 * the commands and by a rebuild from the log. A command's statements must change their row or fail
 * the command (no event without its row): the insert is a plain INSERT, and an update or delete
 * answers the row it changed (RETURNING), none when there was none. A replay of the log (`replay`)
 * skips a create whose row exists, so that applying the log again changes nothing. Values of
 * columns the table no longer has are dropped (a later migration removed them).
 */
export interface Statement {
  text: string;
  values: unknown[];
}

const quoted = (name: string) => `"${name}"`;

const encode = (m: Model, row: Record<string, unknown>): [string, unknown][] =>
  m.columns
    .filter((c) => c.name !== 'tenant_id' && c.name !== 'id' && Object.hasOwn(row, c.name))
    .map((c) => [c.name, isJsonColumn(c) && row[c.name] !== null ? JSON.stringify(row[c.name]) : row[c.name]]);

export const statementOf = (
  m: Model,
  tenantId: string,
  e: RecordEvent,
  options: { replay?: boolean } = {},
): Statement => {
  const table = `${quoted(m.schema)}.${quoted(m.table)}`;
  const verb = verbOf(e.type);
  if (verb === 'deleted')
    return { text: `DELETE FROM ${table} WHERE tenant_id = $1 AND id = $2 RETURNING *`, values: [tenantId, e.data.id] };
  const pairs = encode(m, e.data.after ?? {});
  if (verb === 'created') {
    const columns = ['tenant_id', 'id', ...pairs.map(([c]) => c)].map(quoted).join(', ');
    const params = pairs.map((_, i) => `$${i + 3}`);
    return {
      text: `INSERT INTO ${table} (${columns}) VALUES ($1, $2${params.length ? `, ${params.join(', ')}` : ''})${options.replay ? ' ON CONFLICT DO NOTHING' : ''} RETURNING *`,
      values: [tenantId, e.data.id, ...pairs.map(([, v]) => v)],
    };
  }
  if (pairs.length === 0)
    return { text: `SELECT * FROM ${table} WHERE tenant_id = $1 AND id = $2`, values: [tenantId, e.data.id] };
  return {
    text: `UPDATE ${table} SET ${pairs.map(([c], i) => `${quoted(c)} = $${i + 3}`).join(', ')} WHERE tenant_id = $1 AND id = $2 RETURNING *`,
    values: [tenantId, e.data.id, ...pairs.map(([, v]) => v)],
  };
};
