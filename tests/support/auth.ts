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
    const { tenantId, userId, permissions, emailVerified } = JSON.parse(
      Buffer.from(payload, 'base64url').toString(),
    ) as { tenantId: string; userId: string; permissions: string[]; emailVerified?: boolean };
    const granted = new Set(permissions);
    const principal: Principal = {
      userId,
      tenantId,
      email: `${userId}@example.test`,
      roles: granted.has('platform.*') ? ['Owner'] : [],
      permissions: granted,
      emailVerified: emailVerified ?? true,
    };
    return principal;
  },
};

/** options.emailVerified: false mints the token of a user whose email is not verified */
export const testToken = (
  tenantId: string,
  userId: string,
  permissions: string[],
  options: { emailVerified?: boolean } = {},
): string => `test.${Buffer.from(JSON.stringify({ tenantId, userId, permissions, ...options })).toString('base64url')}`;
