import { billingErrors } from '../../domain/billing/errors';
import type { Kernel } from '../../infra/kernel';
import type { Queryable } from '../../infra/postgres/db';
import { usageLimits } from '../../infra/usage-limits';
import { countedMembers, pendingInvitations } from './lookups';

/**
 * The plan's users limit, held by identity itself (spec 001: users = members plus pending
 * invitations). Every invitation and every acceptance takes the tenant's seat lock (a transaction
 * advisory lock) before it counts, so concurrent ones run one after the other and never overshoot;
 * the gateway's cached CheckLimit only answers earlier. An invitation needs a free seat for its
 * address; an acceptance turns a pending invitation into a member — refused only when the members
 * alone would pass the limit (invitations sent before a downgrade).
 */
const lockSeats = (q: Queryable, tenantId: string) =>
  q.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`identity.seats:${tenantId}`]);

export const assertSeatForInvitation = async (kernel: Kernel, tx: Queryable, tenantId: string): Promise<void> => {
  const limit = await usageLimits(kernel).limitOf(tenantId, 'users');
  if (limit === 0) return;
  await lockSeats(tx, tenantId);
  const used = (await countedMembers(tx, tenantId)) + (await pendingInvitations(tx, tenantId, kernel.clock.now()));
  if (used + 1 > limit) throw billingErrors.planLimitExceeded('users', used, limit);
};

export const assertSeatForMember = async (kernel: Kernel, tx: Queryable, tenantId: string): Promise<void> => {
  const limit = await usageLimits(kernel).limitOf(tenantId, 'users');
  if (limit === 0) return;
  await lockSeats(tx, tenantId);
  const members = await countedMembers(tx, tenantId);
  if (members + 1 > limit) throw billingErrors.planLimitExceeded('users', members, limit);
};
