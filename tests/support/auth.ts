import { commonErrors } from '../../domain/shared/errors';
import type { Authenticator, Principal } from '../../infra/http/auth';

/**
 * The kernel's tests run before and apart from identity: a token `test.<base64url JSON>` stands
 * for a verified principal.
 */
export const testAuthenticator: Authenticator = {
  authenticate: async (token) => {
    const [kind, payload] = token.split('.');
    if (kind !== 'test' || !payload) throw commonErrors.unauthorized();
    const { tenantId, userId, permissions, emailVerified, expiresAt } = JSON.parse(
      Buffer.from(payload, 'base64url').toString(),
    ) as { tenantId: string; userId: string; permissions: string[]; emailVerified?: boolean; expiresAt?: number };
    const granted = new Set(permissions);
    const principal: Principal = {
      userId,
      tenantId,
      email: `${userId}@example.test`,
      roles: granted.has('platform.*') ? ['Owner'] : [],
      permissions: granted,
      emailVerified: emailVerified ?? true,
      ...(expiresAt === undefined ? {} : { expiresAt }),
    };
    return principal;
  },
};

/** options.emailVerified: false mints the token of a user whose email is not verified; expiresAt (epoch ms) a credential that ends */
export const testToken = (
  tenantId: string,
  userId: string,
  permissions: string[],
  options: { emailVerified?: boolean; expiresAt?: number } = {},
): string => `test.${Buffer.from(JSON.stringify({ tenantId, userId, permissions, ...options })).toString('base64url')}`;
