import type { Queryable } from '../../infra/postgres/db';

/**
 * Who a notification may be sent to by userId, and their address: an active member of the tenant
 * whose account is active. The kernel's directory of people answers by default (identity's read
 * models, inline: a member added a moment ago counts at once); tests of notify alone may install
 * another directory.
 */
export interface RecipientDirectory {
  /** the email address of each given user that is an active member of the tenant; unknown users are absent */
  addresses(q: Queryable, tenantId: string, userIds: readonly string[]): Promise<Map<string, string>>;
}

/** a stored template: the read side's query (one copy) */
export type { TemplateRow as StoredTemplate } from '../../projections/notify/queries';
export { findTemplate } from '../../projections/notify/queries';

export const templateNameTaken = async (q: Queryable, tenantId: string, name: string): Promise<boolean> =>
  ((
    await q.query('SELECT 1 FROM rm.notify_templates WHERE tenant_id = $1 AND lower(name) = lower($2)', [
      tenantId,
      name,
    ])
  ).rowCount ?? 0) > 0;

export interface StoredChannel {
  id: string;
  name: string;
  type: string;
  status: string;
}

/** a channel the tenant registered, by id or name (names compare case-insensitively) */
export const findChannel = async (q: Queryable, tenantId: string, idOrName: string): Promise<StoredChannel | null> => {
  const { rows } = await q.query<StoredChannel>(
    'SELECT id, name, type, status FROM rm.notify_channels WHERE tenant_id = $1 AND (id = $2 OR lower(name) = lower($2)) ORDER BY (id = $2) DESC LIMIT 1',
    [tenantId, idOrName],
  );
  return rows[0] ?? null;
};
