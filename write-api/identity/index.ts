import { tokenSettings } from '../../domain/identity/access';
import { IDENTITY_PERMISSIONS } from '../../domain/identity/constants';
import { startIdentityRuntime } from '../../infra/identity/runtime';
import type { Kernel } from '../../infra/kernel';
import { defineRoutes } from '../../infra/services';
import { accessLoader } from '../../commands/identity/lookups';
import { accountRoutes } from './account';
import { membershipRoutes } from './membership';
import { mfaRoutes } from './mfa';
import { providerRoutes } from './providers';
import { roleRoutes } from './role';
import { sessionRoutes } from './session';
import { tenantRoutes } from './tenant';

/**
 * The identity service's writes (spec 000), one plugin per concept. Its start hook loads the key
 * ring and installs the authenticator with identity's access loader (infra/identity/runtime.ts).
 */
export default defineRoutes({
  namespace: 'iam',
  permissions: IDENTITY_PERMISSIONS,
  start: async (kernel: Kernel) => {
    await startIdentityRuntime(kernel, tokenSettings(kernel.config.rootUrl), accessLoader(kernel));
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
