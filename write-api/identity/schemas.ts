import { z } from 'zod';

/** Shapes of the identity API (spec 000: Resources and their fields; field styles per the rulings). */
export const CamelPair = z.object({ accessToken: z.string(), refreshToken: z.string(), expiresAt: z.string() });
export const SnakeUser = z.object({ id: z.string(), email: z.string(), email_verified: z.boolean(), roles: z.array(z.string()), tenant_id: z.string(), mfa_enabled: z.boolean() });
export const SnakePair = z.object({ access_token: z.string(), refresh_token: z.string(), token_type: z.literal('Bearer'), expires_in: z.number().int(), user: SnakeUser });
export const TenantChoice = z.object({ id: z.string(), name: z.string(), logoUrl: z.string(), role: z.string() });
export const TenantSelection = z.object({ requiresTenantSelection: z.literal(true), sessionToken: z.string(), tenants: z.array(TenantChoice) });
export const User = z.object({
  id: z.string(), email: z.string(), firstName: z.string(), lastName: z.string(), avatarUrl: z.string(), tenantId: z.string(), roles: z.array(z.string()),
  emailVerified: z.boolean(), mfaEnabled: z.boolean(), status: z.string(), createdAt: z.string(), updatedAt: z.string(), deletedAt: z.string().nullable(),
});
export const Role = z.object({
  id: z.string(), name: z.string(), description: z.string(), permissions: z.array(z.string()), tenantId: z.string(), createdBy: z.string(), createdAt: z.string(), builtIn: z.boolean(),
});
export const ProviderLink = z.object({
  id: z.string(), providerId: z.string(), providerType: z.string(), externalId: z.string(), email: z.string(), displayName: z.string(), linkedAt: z.string(),
});
export const Email = z.string().trim().email().max(254);
export const Password = z.string().min(1).max(1024);
export const IdParam = z.object({ id: z.string().min(1).max(64) });
/** role names when inviting; more than 50 is refused by the command as rbac-limit-exceeded (spec 000), not by the schema */
export const RoleNames = z.array(z.string().max(100)).max(1000);
