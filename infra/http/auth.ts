import { commonErrors } from '../../domain/shared/errors';
import { grants, PLATFORM_WILDCARD } from '../../domain/shared/permissions';

/** Who is calling, as established from a verified access token. tenantId comes only from here. */
export interface Principal {
  userId: string;
  tenantId: string;
  email: string;
  roles: readonly string[];
  permissions: ReadonlySet<string>;
  emailVerified: boolean;
  /** the platform owner acting as this user (impersonation), from the token's act claim */
  impersonatorId?: string;
  /** a module calling with its module key (commands/modules/keys.ts): its slug, the events' source */
  source?: string;
  moduleId?: string;
  /** when the credential stops being valid (epoch ms; an access token's exp): a long-lived connection ends then */
  expiresAt?: number;
}

/** Turns a bearer token into a principal; throws a 401 DomainError when it cannot. Identity provides it. */
export interface Authenticator {
  authenticate(token: string): Promise<Principal>;
}

/** Until an authenticator is installed, every protected route answers 401. */
export const noAuthenticator: Authenticator = {
  authenticate: async () => {
    throw commonErrors.unauthorized();
  },
};

/**
 * What a route needs from its caller. Routes declare it in their config; the edge enforces it
 * before any handler runs (spec 000, rule 11).
 */
export type RouteAccess =
  { access: 'public' } | { access: 'bearer' } | { access: 'permission'; permission: string } | { access: 'admin' };

/** Permission resolution (domain/shared/permissions.ts): exact key, then {module}.*; platform.* grants everything. */
export const hasPermission = (granted: ReadonlySet<string>, required: string): boolean => grants(granted, required);

/** the built-in role of a tenant's owners; a tenant cannot create another role of that name */
export const OWNER_ROLE_NAME = 'Owner';

/**
 * An admin (the 5,000/min rate limit, /health): the platform owner, a holder of the tenant's
 * built-in Owner role, or a holder of both users.* and roles.* — never a custom role merely
 * named "admin" (any roles.create holder could name one so).
 */
export const isAdmin = (p: Principal): boolean =>
  p.permissions.has(PLATFORM_WILDCARD) ||
  p.roles.includes(OWNER_ROLE_NAME) ||
  (p.permissions.has('users.*') && p.permissions.has('roles.*'));

export const bearerToken = (header: string | undefined): string | null => {
  if (!header) return null;
  const match = /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/i.exec(header.trim());
  return match?.[1] ?? null;
};

/** the verified caller of a route that requires one (the edge set it before the handler ran) */
export const callerOf = (request: { principal?: Principal }): Principal => {
  if (!request.principal) throw commonErrors.unauthorized();
  return request.principal;
};
