import type { Queryable } from './postgres/db';

/**
 * The directory of people: what every context may know of identity's users, members and tenants,
 * through one port (`kernel.people`) that identity implements over its own read models
 * (commands/identity/people.ts, installed by the composition root as `ServiceParts.people`). No
 * other context names identity's tables, so renaming one breaks nobody else
 * (tests/unit/lint/people.spec.ts).
 *
 * Every method reads in `q`: inside a command's transaction (`uow.tx`) it sees what identity's
 * inline read models committed, and what the command itself wrote — a member added a moment ago
 * counts at once. Accounts are the platform's; "active member" means a membership of the tenant
 * with status active whose account is active too.
 */
export interface People {
  /** an active member of the tenant whose account is active (who may own a wallet) */
  isActiveMember(q: Queryable, tenantId: string, userId: string): Promise<boolean>;
  /** the email address of each given user that is an active member with an active account; others are absent */
  addresses(q: Queryable, tenantId: string, userIds: readonly string[]): Promise<Map<string, string>>;
  /** the tenant's active Owners (its built-in Owner role) with active accounts, by address */
  owners(q: Queryable, tenantId: string): Promise<{ userId: string; email: string }[]>;
  /** the addresses of the tenant's admins: active holders of any of its built-in roles with active accounts, sorted */
  adminAddresses(q: Queryable, tenantId: string): Promise<string[]>;
  /** every user with a membership of the tenant, whatever its status, sorted (erasure anonymizes them all) */
  memberIds(q: Queryable, tenantId: string): Promise<string[]>;
  /**
   * The personal values of a user that an anonymization hides — the account's email and names,
   * its linked identities' emails and display names — and whether the user belongs to the tenant;
   * null for an unknown user.
   */
  person(q: Queryable, tenantId: string, userId: string): Promise<{ member: boolean; values: string[] } | null>;
  /** of these file ids, those the avatar URL of a member's account of the tenant names */
  avatarsInUse(q: Queryable, tenantId: string, fileIds: readonly string[]): Promise<Set<string>>;
  /** a tenant identity knows (the platform pseudo-tenant included when identity registered it) */
  tenantExists(q: Queryable, tenantId: string): Promise<boolean>;
  /** customer tenants oldest first (created_at, then id), after a position, at most `limit` */
  tenants(
    q: Queryable,
    after: { createdAt: Date; tenantId: string } | null,
    limit: number,
  ): Promise<{ tenantId: string; createdAt: Date }[]>;
  /** the address of the tenant's owner (who created it); null when unknown or no longer deliverable (erased) */
  ownerAddress(q: Queryable, tenantId: string): Promise<string | null>;
  /**
   * The tenant's pending invitations as billing counts seats (spec 001: users = members plus
   * pending invitations): distinct addresses invited, not accepted nor expired at `now`, other
   * than those of counted members.
   */
  pendingInvitations(q: Queryable, tenantId: string, now: Date): Promise<number>;
}

/**
 * A platform without identity (its tokens name users and tenants; no registry of either): nobody
 * is a member, nobody has an address, every tenant a token names exists, and every avatar counts
 * as in use (nothing is deleted on a guess).
 */
export const noPeople: People = {
  isActiveMember: async () => false,
  addresses: async () => new Map(),
  owners: async () => [],
  adminAddresses: async () => [],
  memberIds: async () => [],
  person: async () => null,
  avatarsInUse: async (_q, _tenantId, fileIds) => new Set(fileIds),
  tenantExists: async () => true,
  tenants: async () => [],
  ownerAddress: async () => null,
  pendingInvitations: async () => 0,
};
