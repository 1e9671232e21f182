/** Limits and lifetimes of spec 000 (Limits, Authentication, Security flows). */
export const PLATFORM_TENANT_ID = '00000000-0000-0000-0000-000000000000';
export const OWNER_ROLE = 'Owner';
export const PLATFORM_OWNER_ROLE = 'Platform Owner';

export const LIMITS = { rolesPerUser: 50, permissionsPerRole: 1000, rolesPerTenant: 500, recoveryCodes: 10 } as const;

export const LIFETIMES = {
  accessTokenSeconds: 15 * 60,
  impersonationSeconds: 60 * 60,
  refreshTokenMs: 7 * 24 * 3600_000,
  refreshGraceMs: 10_000,
  sessionTokenMs: 5 * 60_000,
  mfaTokenMs: 5 * 60_000,
  verifyEmailMs: 24 * 3600_000,
  resetMs: 3600_000,
  inviteMs: 72 * 3600_000,
  oauthStateMs: 10 * 60_000,
  siweNonceMs: 10 * 60_000,
} as const;

export const RECOVERY = {
  maxAttempts: 5,
  windowMs: 15 * 60_000,
  lockMs: 3600_000,
  lockoutsBeforeLock: 3,
  /** no refused recovery answers sooner: known and unknown emails take the same time */
  failureFloorMs: 100,
} as const;
export const VERIFY_RESEND = { max: 3, windowMs: 3600_000 } as const;

/** The permissions the identity service registers (spec 000, Users and Roles). */
export const IDENTITY_PERMISSIONS: Record<string, string> = {
  'users.create': 'create users and invite them',
  'users.list': 'list users and read their permissions',
  'users.update': 'change users and restore deleted ones',
  'users.delete': 'soft-delete users',
  'users.impersonate': 'act as a user of a tenant (platform owner only)',
  'roles.list': 'list roles and permissions',
  'roles.create': 'create roles',
  'roles.update': 'change the permissions of roles',
  'roles.delete': 'delete custom roles',
  'roles.assign': 'assign and revoke roles',
};
