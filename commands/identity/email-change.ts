import { LIFETIMES, PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import { identityErrors } from '../../domain/identity/errors';
import { commonErrors } from '../../domain/shared/errors';
import type { Kernel } from '../../infra/kernel';
import { bumpAccessEpoch } from '../../projections/identity/shared/runtime';
import type { Queryable } from '../../infra/postgres/db';
import { Account, accountStream, anonymousMeta } from './aggregates';
import { findAccount } from './lookups';
import { link, sendLater } from './mail';
import { normalizeEmail } from './passwords';
import { credentials } from './repositories/credentials';
import { emailChanges } from './repositories/email-changes';
import { oneTimeTokens } from './repositories/one-time-tokens';
import { consumeOneTimeToken, createOneTimeToken, userOf } from './tokens';

/**
 * Changing the address an account signs in with (and receives its reset links at) is the most
 * direct way to take it over, so it takes effect only after both sides agree: the holder confirms
 * from the old address and proves the new one. Until then the account keeps its old address.
 */

type Side = 'old' | 'new';

/** starts (or restarts) an address change in the caller's transaction; the mails leave after the answer */
export const requestEmailChange = async (
  kernel: Kernel,
  q: Queryable,
  o: { userId: string; newEmail: string; requestedBy: string },
): Promise<void> => {
  const account = await findAccount(q, o.userId);
  if (!account) throw commonErrors.notFound('The user does not exist.');
  const newEmail = normalizeEmail(o.newEmail);
  if (newEmail === account.email) return;
  const changeId = kernel.ids.next();
  const expiresAt = new Date(kernel.clock.now().getTime() + LIFETIMES.verifyEmailMs);
  await oneTimeTokens.deleteOfUser(q, 'email-change', o.userId);
  await emailChanges.start(q, { userId: o.userId, changeId, newEmail, requestedBy: o.requestedBy, expiresAt });
  const token = async (side: Side) =>
    (
      await createOneTimeToken(kernel, q, {
        purpose: 'email-change',
        ttlMs: LIFETIMES.verifyEmailMs,
        userId: o.userId,
        email: side === 'old' ? account.email : newEmail,
        payload: { changeId, side },
      })
    ).token;
  const [oldToken, newToken] = [await token('old'), await token('new')];
  sendLater(kernel, [
    {
      to: account.email,
      subject: 'Confirm the change of your sign-in address',
      headers: { 'X-Platform-Token': oldToken, 'X-Platform-Purpose': 'email-change-old' },
      text:
        `A change of your account's address to ${newEmail} was asked for. Confirm it: ${link(kernel, 'confirm-email-change', oldToken)}\n` +
        'If you did not ask for it, ignore this mail: nothing changes without this confirmation.',
    },
    {
      to: newEmail,
      subject: 'Verify your new sign-in address',
      headers: { 'X-Platform-Token': newToken, 'X-Platform-Purpose': 'email-change-new' },
      text: `Verify this address for your account: ${link(kernel, 'confirm-email-change', newToken)}\nThe link is valid for 24 hours.`,
    },
  ]);
};

const sideOf = (value: unknown): Side | null => (value === 'old' || value === 'new' ? value : null);

export type EmailChangeOutcome =
  { email_change: 'completed'; email: string } | { email_change: 'pending'; confirmed: Side };

/** one of the two confirmations; the second one moves the account to the new address */
export const confirmEmailChange = async (
  kernel: Kernel,
  traceId: string,
  token: string,
): Promise<EmailChangeOutcome> => {
  const outcome = await kernel.commands.run(
    anonymousMeta(PLATFORM_TENANT_ID, traceId),
    async (uow): Promise<EmailChangeOutcome & { userId: string; previous?: string }> => {
      const what = 'confirmation token';
      const claimed = await consumeOneTimeToken(kernel, uow.tx, 'email-change', token, what);
      const userId = userOf(claimed, what);
      const side = sideOf(claimed.payload.side);
      const change = await emailChanges.lock(uow.tx, userId);
      if (!change || !side || change.changeId !== claimed.payload.changeId) throw identityErrors.tokenInvalid(what);
      const at = kernel.clock.now();
      if (change.expiresAt.getTime() <= at.getTime()) throw identityErrors.tokenExpired(what);
      const confirmed = { old: change.oldConfirmed || side === 'old', new: change.newConfirmed || side === 'new' };
      if (!confirmed.old || !confirmed.new) {
        await emailChanges.confirm(uow.tx, userId, confirmed);
        return { email_change: 'pending', confirmed: side, userId };
      }
      if (!(await credentials.changeEmail(uow.tx, userId, change.newEmail, at)))
        throw commonErrors.conflict('The new address belongs to another account.');
      const account = await uow.load(Account, accountStream(userId));
      const previous = account.state.status === 'none' ? '' : account.state.email;
      uow.decide(Account, account, { type: 'ChangeEmail', email: change.newEmail });
      uow.afterCommit(() => bumpAccessEpoch(kernel, { userId }));
      await emailChanges.delete(uow.tx, userId);
      // reset links sent to the old address no longer reset this account (verification links are refused as stale instead)
      await oneTimeTokens.deleteOfUser(uow.tx, 'reset', userId);
      return { email_change: 'completed', email: change.newEmail, userId, previous };
    },
  );
  if (outcome.email_change === 'completed') {
    if (outcome.previous) {
      sendLater(kernel, {
        to: outcome.previous,
        subject: 'Your sign-in address was changed',
        headers: { 'X-Platform-Purpose': 'email-changed' },
        text: `Your account now signs in with ${outcome.email}. If you did not make this change, contact your administrator at once.`,
      });
    }
    return { email_change: 'completed', email: outcome.email };
  }
  return { email_change: 'pending', confirmed: outcome.confirmed };
};
