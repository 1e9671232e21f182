import type { FieldError } from '../shared/errors';
import { defineErrors } from '../shared/errors';

/** The identity context's refusals, with the statuses and suffixes of spec 000 (Errors, identity-specific). */
export const identityErrors = defineErrors({
  invalidCredentials: () => ({
    status: 401,
    suffix: 'invalid-credentials',
    title: 'Invalid credentials',
    detail: 'The email or the password is wrong.',
  }),
  mfaRequired: (mfaToken: string) => ({
    status: 401,
    suffix: 'mfa-required',
    title: 'MFA required',
    detail: 'This account has two-factor authentication on: send the TOTP code.',
    extensions: { mfa_required: true, mfa_token: mfaToken, mfa_type: 'totp' },
  }),
  mfaInvalid: (detail = 'The TOTP code is wrong or expired.') => ({
    status: 401,
    suffix: 'mfa-invalid',
    title: 'MFA code invalid',
    detail,
  }),
  tokenExpired: (what = 'token') => ({
    status: 401,
    suffix: 'token-expired',
    title: 'Token expired',
    detail: `The ${what} has expired.`,
  }),
  tokenInvalid: (what = 'token') => ({
    status: 401,
    suffix: 'unauthorized',
    title: 'Unauthorized',
    detail: `The ${what} is not valid.`,
  }),
  accountLocked: (detail = 'The account is locked.') => ({
    status: 403,
    suffix: 'account-locked',
    title: 'Account locked',
    detail,
  }),
  passwordPolicy: (errors: FieldError[]) => ({
    status: 400,
    suffix: 'validation-error',
    title: 'Validation failed',
    detail: 'The password does not meet the policy.',
    errors,
  }),
  emailTaken: () => ({
    status: 409,
    suffix: 'conflict',
    title: 'Conflict',
    detail: 'An account with this email exists already.',
  }),
  mfaAlreadyEnabled: () => ({
    status: 409,
    suffix: 'conflict',
    title: 'Conflict',
    detail: 'Two-factor authentication is on already.',
  }),
  mfaNotEnabled: () => ({
    status: 400,
    suffix: 'validation-error',
    title: 'Validation failed',
    detail: 'Two-factor authentication is not on.',
    errors: [{ field: 'mfa', message: 'two-factor authentication is not enabled', code: 'MFA_NOT_ENABLED' }],
  }),
  mfaNotPending: () => ({
    status: 400,
    suffix: 'validation-error',
    title: 'Validation failed',
    detail: 'Start the setup with POST /auth/mfa/enable first.',
    errors: [{ field: 'code', message: 'no two-factor setup is pending', code: 'MFA_NOT_PENDING' }],
  }),
  providerAlreadyLinked: () => ({
    status: 409,
    suffix: 'provider-already-linked',
    title: 'Provider already linked',
    detail: 'This provider account is linked to another user.',
  }),
  providerLinkedAlready: () => ({
    status: 409,
    suffix: 'conflict',
    title: 'Conflict',
    detail: 'This user has a link to this provider already.',
  }),
  lastProvider: () => ({
    status: 400,
    suffix: 'last-provider',
    title: 'Last provider',
    detail: 'This is the last way to sign in to the account; it cannot be unlinked.',
  }),
  rbacLimit: (what: string, limit: number) => ({
    status: 400,
    suffix: 'rbac-limit-exceeded',
    title: 'RBAC limit exceeded',
    detail: `At most ${limit} ${what}.`,
  }),
  builtInRole: () => ({
    status: 400,
    suffix: 'validation-error',
    title: 'Validation failed',
    detail: 'Built-in roles cannot be deleted or changed.',
    errors: [{ field: 'id', message: 'built-in roles cannot be deleted or changed', code: 'BUILT_IN_ROLE' }],
  }),
  roleNameTaken: () => ({
    status: 409,
    suffix: 'conflict',
    title: 'Conflict',
    detail: 'A role with this name exists already in the tenant.',
  }),
  unknownPermissions: (keys: string[]) => ({
    status: 400,
    suffix: 'validation-error',
    title: 'Validation failed',
    detail: 'Some permissions are not registered.',
    errors: keys
      .slice(0, 20)
      .map((k) => ({ field: 'permissions', message: `unknown permission ${k}`, code: 'UNKNOWN_PERMISSION' })),
  }),
  memberExists: () => ({
    status: 409,
    suffix: 'conflict',
    title: 'Conflict',
    detail: 'The user is a member of this tenant already.',
  }),
  slugTaken: () => ({
    status: 400,
    suffix: 'slug-taken',
    title: 'Slug taken',
    detail: 'This tenant slug is registered already.',
  }),
  insufficientRole: (detail = 'Your roles do not allow this delegation.') => ({
    status: 403,
    suffix: 'insufficient-role',
    title: 'Insufficient role',
    detail,
  }),
  selfDelegation: () => ({
    status: 403,
    suffix: 'self-delegation',
    title: 'Self-delegation',
    detail: 'A role cannot be assigned to oneself; ask another administrator.',
  }),
  lastOwner: (detail: string) => ({ status: 409, suffix: 'last-owner', title: 'Last owner', detail }),
  accountHeldElsewhere: () => ({
    status: 403,
    suffix: 'forbidden',
    title: 'Forbidden',
    detail:
      "This account's email, password, names, avatar and MFA belong to its holder; a tenant administrator changes them only for accounts that belong to the tenant alone.",
  }),
  notPlatformOwner: () => ({
    status: 403,
    suffix: 'forbidden',
    title: 'Forbidden',
    detail: 'Only the platform owner may do this.',
  }),
  emailNotVerified: () => ({
    status: 403,
    suffix: 'forbidden',
    title: 'Forbidden',
    detail: 'Verify your email address first.',
  }),
  tenantDeleted: () => ({
    status: 410,
    suffix: 'tenant-deleted',
    title: 'Tenant deleted',
    detail: 'The tenant has been deleted.',
  }),
  tenantSuspended: () => ({
    status: 423,
    suffix: 'tenant-suspended',
    title: 'Tenant suspended',
    detail: 'The tenant is suspended.',
  }),
});
