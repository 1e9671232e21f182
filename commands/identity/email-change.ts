import { LIFETIMES, PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import { identityErrors } from '../../domain/identity/errors';
import { commonErrors } from '../../domain/shared/errors';
import type { Kernel } from '../../infra/kernel';
import type { Queryable } from '../../infra/postgres/db';
import { PgCode, pgErrorCode } from '../../infra/postgres/db';
import { findAccount } from '../../projections/identity/queries';
import { normalizeEmail } from './accounts';
import { Account, accountStream, anonymousMeta } from './aggregates';
import { link, sendLater } from './mail';
import { bumpAccessEpoch } from './runtime';
import { consumeOneTimeToken, createOneTimeToken } from './tokens';

/**
 * Changing the address an account signs in with (and receives its reset links at) is the most
 * direct way to take it over, so it takes effect only after both sides agree: the holder confirms
 * from the old address and proves the new one. Until then the account keeps its old address.
 */

interface ChangeRow { user_id: string; change_id: string; new_email: string; old_confirmed: boolean; new_confirmed: boolean; expires_at: Date }
type Side = 'old' | 'new';

/** starts (or restarts) an address change in the caller's transaction; the mails leave after the answer */
export const requestEmailChange = async (kernel: Kernel, q: Queryable, o: { userId: string; newEmail: string; requestedBy: string }): Promise<void> => {
  const account = await findAccount(q, o.userId);
  if (!account) throw commonErrors.notFound('The user does not exist.');
  const newEmail = normalizeEmail(o.newEmail);
  if (newEmail === account.email) return;
  const changeId = kernel.ids.next();
  const expiresAt = new Date(kernel.clock.now().getTime() + LIFETIMES.verifyEmailMs);
  await q.query("DELETE FROM identity.one_time_tokens WHERE purpose = 'email-change' AND user_id = $1", [o.userId]);
  await q.query(
    `INSERT INTO identity.email_changes (user_id, change_id, new_email, requested_by, expires_at) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (user_id) DO UPDATE SET change_id = $2, new_email = $3, old_confirmed = false, new_confirmed = false, requested_by = $4, expires_at = $5`,
    [o.userId, changeId, newEmail, o.requestedBy, expiresAt]);
  const token = async (side: Side) => (await createOneTimeToken(kernel, q, {
    purpose: 'email-change', ttlMs: LIFETIMES.verifyEmailMs, userId: o.userId, email: side === 'old' ? account.email : newEmail, payload: { changeId, side },
  })).token;
  const [oldToken, newToken] = [await token('old'), await token('new')];
  sendLater(kernel, [
    {
      to: account.email, subject: 'Confirm the change of your sign-in address', headers: { 'X-Platform-Token': oldToken, 'X-Platform-Purpose': 'email-change-old' },
      text: `A change of your account's address to ${newEmail} was asked for. Confirm it: ${link(kernel, 'confirm-email-change', oldToken)}\n`
        + 'If you did not ask for it, ignore this mail: nothing changes without this confirmation.',
    },
    {
      to: newEmail, subject: 'Verify your new sign-in address', headers: { 'X-Platform-Token': newToken, 'X-Platform-Purpose': 'email-change-new' },
      text: `Verify this address for your account: ${link(kernel, 'confirm-email-change', newToken)}\nThe link is valid for 24 hours.`,
    },
  ]);
};

export type EmailChangeOutcome = { email_change: 'completed'; email: string } | { email_change: 'pending'; confirmed: Side };

/** one of the two confirmations; the second one moves the account to the new address */
export const confirmEmailChange = async (kernel: Kernel, traceId: string, token: string): Promise<EmailChangeOutcome> => {
  const outcome = await kernel.commands.run(anonymousMeta(PLATFORM_TENANT_ID, traceId), async (uow): Promise<EmailChangeOutcome & { userId: string; previous?: string }> => {
    const claimed = await consumeOneTimeToken(kernel, uow.tx, 'email-change', token, 'confirmation token');
    const userId = claimed.user_id!;
    const side = claimed.payload.side as Side;
    const { rows } = await uow.tx.query<ChangeRow>('SELECT * FROM identity.email_changes WHERE user_id = $1 FOR UPDATE', [userId]);
    const change = rows[0];
    if (!change || change.change_id !== claimed.payload.changeId) throw identityErrors.tokenInvalid('confirmation token');
    if (change.expires_at.getTime() <= kernel.clock.now().getTime()) throw identityErrors.tokenExpired('confirmation token');
    const confirmed = { old: change.old_confirmed || side === 'old', new: change.new_confirmed || side === 'new' };
    if (!confirmed.old || !confirmed.new) {
      await uow.tx.query('UPDATE identity.email_changes SET old_confirmed = $2, new_confirmed = $3 WHERE user_id = $1', [userId, confirmed.old, confirmed.new]);
      return { email_change: 'pending', confirmed: side, userId };
    }
    try {
      await uow.tx.query('UPDATE identity.credentials SET email = $2, updated_at = now() WHERE user_id = $1', [userId, change.new_email]);
    } catch (error) {
      if (pgErrorCode(error) === PgCode.uniqueViolation) throw commonErrors.conflict('The new address belongs to another account.');
      throw error;
    }
    const account = await uow.load(Account, accountStream(userId));
    const previous = account.state.status === 'none' ? '' : account.state.email;
    uow.decide(Account, account, { type: 'ChangeEmail', email: change.new_email });
    uow.afterCommit(() => bumpAccessEpoch(kernel, { userId }));
    await uow.tx.query('DELETE FROM identity.email_changes WHERE user_id = $1', [userId]);
    // reset links sent to the old address no longer reset this account (verification links are refused as stale instead)
    await uow.tx.query("DELETE FROM identity.one_time_tokens WHERE user_id = $1 AND purpose = 'reset'", [userId]);
    return { email_change: 'completed', email: change.new_email, userId, previous };
  });
  if (outcome.email_change === 'completed') {
    if (outcome.previous) {
      sendLater(kernel, { to: outcome.previous, subject: 'Your sign-in address was changed', headers: { 'X-Platform-Purpose': 'email-changed' },
        text: `Your account now signs in with ${outcome.email}. If you did not make this change, contact your administrator at once.` });
    }
    return { email_change: 'completed', email: outcome.email };
  }
  return { email_change: 'pending', confirmed: outcome.confirmed };
};
