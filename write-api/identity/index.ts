import { IDENTITY_PERMISSIONS } from '../../domain/identity/constants';
import type { Kernel } from '../../infra/kernel';
import { defineRoutes } from '../../infra/services';
import { startIdentityCommands } from '../../commands/identity/runtime';
import { accountRoutes } from './account';
import { membershipRoutes } from './membership';
import { mfaRoutes } from './mfa';
import { providerRoutes } from './providers';
import { roleRoutes } from './role';
import { sessionRoutes } from './session';
import { tenantRoutes } from './tenant';

/**
 * The identity service's writes (spec 000), one plugin per concept. Its start hook loads the key
 * ring and installs the authenticator with identity's access loader (commands/identity/runtime.ts).
 */
export default defineRoutes({
  namespace: 'iam',
  permissions: IDENTITY_PERMISSIONS,
  start: async (kernel: Kernel) => {
    await startIdentityCommands(kernel);
  },
  register(app, kernel) {
    for (const routes of [
      accountRoutes,
      sessionRoutes,
      mfaRoutes,
      membershipRoutes,
      roleRoutes,
      tenantRoutes,
      providerRoutes,
    ])
      routes(app, kernel);
  },
});
