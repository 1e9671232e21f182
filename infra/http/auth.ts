import { commonErrors } from '../../domain/shared/errors';

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
}

/** Turns a bearer token into a principal; throws a 401 DomainError when it cannot. Identity provides it. */
export interface Authenticator {
  authenticate(token: string): Promise<Principal>;
}

/** Until an authenticator is installed, every protected route answers 401. */
export const noAuthenticator: Authenticator = {
  authenticate: async () => { throw commonErrors.unauthorized(); },
};

/**
 * What a route needs from its caller. Routes declare it in their config; the edge enforces it
 * before any handler runs (spec 000, rule 11).
 */
export type RouteAccess =
  | { access: 'public' }
  | { access: 'bearer' }
  | { access: 'permission'; permission: string }
  | { access: 'admin' };

/**
 * Permission resolution: the exact key first, then the wildcard {module}.* (spec 000, Roles and
 * permissions). The platform owner's platform.* grants everything.
 */
export const hasPermission = (granted: ReadonlySet<string>, required: string): boolean => {
  if (granted.has(required) || granted.has('platform.*')) return true;
  const module = required.slice(0, required.indexOf('.'));
  return module.length > 0 && granted.has(`${module}.*`);
};

/** an admin is a platform owner or a holder of a wildcard over users and roles */
export const isAdmin = (p: Principal): boolean =>
  p.permissions.has('platform.*') || p.roles.some((r) => /^(owner|admin)$/i.test(r));

export const bearerToken = (header: string | undefined): string | null => {
  if (!header) return null;
  const match = /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/i.exec(header.trim());
  return match?.[1] ?? null;
};
