import type { Queryable } from '../../../infra/postgres/db';

/**
 * identity.email_changes: one pending address change per account, confirmed from the old address
 * and verified on the new one before the account's email changes.
 */
export interface EmailChange {
  userId: string;
  changeId: string;
  newEmail: string;
  oldConfirmed: boolean;
  newConfirmed: boolean;
  expiresAt: Date;
}

interface Row {
  user_id: string;
  change_id: string;
  new_email: string;
  old_confirmed: boolean;
  new_confirmed: boolean;
  expires_at: Date;
}

export const emailChanges = {
  /** starts a change, replacing a pending one (its confirmations are lost) */
  async start(
    q: Queryable,
    c: { userId: string; changeId: string; newEmail: string; requestedBy: string; expiresAt: Date },
  ): Promise<void> {
    await q.query(
      `INSERT INTO identity.email_changes (user_id, change_id, new_email, requested_by, expires_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (user_id) DO UPDATE SET change_id = $2, new_email = $3, old_confirmed = false, new_confirmed = false, requested_by = $4, expires_at = $5`,
      [c.userId, c.changeId, c.newEmail, c.requestedBy, c.expiresAt],
    );
  },

  /** the user's pending change, locked for the rest of the transaction */
  lock: async (q: Queryable, userId: string): Promise<EmailChange | null> => {
    const r = (await q.query<Row>('SELECT * FROM identity.email_changes WHERE user_id = $1 FOR UPDATE', [userId]))
      .rows[0];
    return r
      ? {
          userId: r.user_id,
          changeId: r.change_id,
          newEmail: r.new_email,
          oldConfirmed: r.old_confirmed,
          newConfirmed: r.new_confirmed,
          expiresAt: r.expires_at,
        }
      : null;
  },

  async confirm(q: Queryable, userId: string, confirmed: { old: boolean; new: boolean }): Promise<void> {
    await q.query('UPDATE identity.email_changes SET old_confirmed = $2, new_confirmed = $3 WHERE user_id = $1', [
      userId,
      confirmed.old,
      confirmed.new,
    ]);
  },

  async delete(q: Queryable, userId: string): Promise<void> {
    await q.query('DELETE FROM identity.email_changes WHERE user_id = $1', [userId]);
  },
};
