import { z } from 'zod';
import { ownerGrants } from './access';
import { PLATFORM_TENANT_ID } from './constants';

/**
 * The identity API's shapes (spec 000: Resources and their fields; field styles per the rulings),
 * shared by the write and the read API, and the mapping of the read models' rows to them.
 */

// ---------------------------------------------------------------------------------------------
// Requests

export const Email = z.string().trim().email().max(254);
/** a password being proven (login, disable MFA): any length the body limit lets through; the policy applies where one is set */
export const Password = z.string().min(1).max(1024);
/**
 * A password being set (register, reset, accept an invitation). The policy (12 to 128 characters
 * after NFKC normalization, counted in code points, not only blanks, not one character repeated,
 * not breached) answers its own validation errors (TOO_SHORT, TOO_LONG, …), so the schema only
 * documents the bounds it enforces.
 */
export const NewPassword = Password.meta({
  minLength: 12,
  maxLength: 128,
  description:
    '12 to 128 characters (Unicode code points after NFKC normalization); not only blanks, not one character repeated, not in the breached-password list',
});
export const IdParam = z.object({ id: z.string().min(1).max(64) });
export const Token = z.string().max(128);
export const TotpCode = z.string().max(16);
export const TenantId = z.string().min(1).max(64);
export const Name = z.string().max(100);
/** role names when inviting; more than 50 is refused by the command as rbac-limit-exceeded (spec 000), not by the schema */
export const RoleNames = z.array(z.string().max(100)).max(1000);
export const RoleIds = z.array(z.string().max(64)).max(1000);

// ---------------------------------------------------------------------------------------------
// Answers

export const CamelPair = z.object({ accessToken: z.string(), refreshToken: z.string(), expiresAt: z.string() });
export type CamelPair = z.infer<typeof CamelPair>;
export const SnakeUser = z.object({
  id: z.string(),
  email: z.string(),
  email_verified: z.boolean(),
  roles: z.array(z.string()),
  tenant_id: z.string(),
  mfa_enabled: z.boolean(),
});
export const SnakePair = z.object({
  access_token: z.string(),
  refresh_token: z.string(),
  token_type: z.literal('Bearer'),
  expires_in: z.number().int(),
  user: SnakeUser,
});
export type SnakePair = z.infer<typeof SnakePair>;
export const TenantChoice = z.object({ id: z.string(), name: z.string(), logoUrl: z.string(), role: z.string() });
export type TenantChoice = z.infer<typeof TenantChoice>;
export const TenantSelection = z.object({
  requiresTenantSelection: z.literal(true),
  sessionToken: z.string(),
  tenants: z.array(TenantChoice),
});
export type TenantSelection = z.infer<typeof TenantSelection>;
export const UserView = z.object({
  id: z.string(),
  email: z.string(),
  firstName: z.string(),
  lastName: z.string(),
  avatarUrl: z.string(),
  tenantId: z.string(),
  roles: z.array(z.string()),
  emailVerified: z.boolean(),
  mfaEnabled: z.boolean(),
  status: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  deletedAt: z.string().nullable(),
});
export type UserView = z.infer<typeof UserView>;
export const RoleView = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  permissions: z.array(z.string()),
  tenantId: z.string(),
  createdBy: z.string(),
  createdAt: z.string(),
  builtIn: z.boolean(),
});
export type RoleView = z.infer<typeof RoleView>;
export const ProviderLinkView = z.object({
  id: z.string(),
  providerId: z.string(),
  providerType: z.string(),
  externalId: z.string(),
  email: z.string(),
  displayName: z.string(),
  linkedAt: z.string(),
});
export type ProviderLinkView = z.infer<typeof ProviderLinkView>;
export const ProviderInfo = z.object({ id: z.string(), type: z.string(), name: z.string() });
export type ProviderInfo = z.infer<typeof ProviderInfo>;
/** the answer to an invitation of someone who is not a member yet (an active member gets no body) */
export const InviteAnswer = z.object({ invite_id: z.string(), email: z.string(), expires_at: z.string() });
export type InviteAnswer = z.infer<typeof InviteAnswer>;
export const Permissions = z.array(z.string());
/** an answer without a body (204 No Content, or a 202 that says nothing more) */
export const NoBody = z.null().describe('no body');

// ---------------------------------------------------------------------------------------------
// Read-model rows and their views (the read models are identity's: projections/identity)

export interface UserRecord {
  id: string;
  email: string;
  first_name: string;
  last_name: string;
  avatar_url: string;
  email_verified: boolean;
  mfa_enabled: boolean;
  account_status: string;
  member_status: string;
  deleted_at: Date | null;
  created_at: Date;
  updated_at: Date;
  tenant_id: string;
  role_ids: string[];
  roles: string[];
}

/** a member's status as shown: soft-deleted first, then the account's lock, then the membership's status */
export const userStatus = (row: Pick<UserRecord, 'account_status' | 'member_status'>): string =>
  row.member_status === 'pending_deletion'
    ? 'pending_deletion'
    : row.account_status === 'locked'
      ? 'locked'
      : row.member_status;

export const toUser = (row: UserRecord): UserView => ({
  id: row.id,
  email: row.email,
  firstName: row.first_name,
  lastName: row.last_name,
  avatarUrl: row.avatar_url,
  tenantId: row.tenant_id,
  roles: row.roles,
  emailVerified: row.email_verified,
  mfaEnabled: row.mfa_enabled,
  status: userStatus(row),
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
  deletedAt: row.deleted_at ? row.deleted_at.toISOString() : null,
});

export interface RoleRecord {
  id: string;
  name: string;
  description: string;
  permissions: string[];
  built_in: boolean;
  created_by: string;
  created_at: Date;
  tenant_id: string;
}

/** a role as shown; `registered` are the permission keys of the running platform (the Owner role is shown as it grants) */
export const toRole = (r: RoleRecord, registered: readonly string[]): RoleView => ({
  id: r.id,
  name: r.name,
  description: r.description,
  permissions: r.built_in && r.tenant_id !== PLATFORM_TENANT_ID ? ownerGrants(registered) : r.permissions,
  tenantId: r.tenant_id,
  createdBy: r.created_by,
  createdAt: r.created_at.toISOString(),
  builtIn: r.built_in,
});

export interface ProviderLinkRecord {
  id: string;
  provider_id: string;
  provider_type: string;
  external_id: string;
  email: string;
  display_name: string;
  linked_at: Date;
}

export const toProviderLink = (r: ProviderLinkRecord): ProviderLinkView => ({
  id: r.id,
  providerId: r.provider_id,
  providerType: r.provider_type,
  externalId: r.external_id,
  email: r.email,
  displayName: r.display_name,
  linkedAt: r.linked_at.toISOString(),
});
