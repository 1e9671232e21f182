import { tokenSettings } from '../../domain/identity/access';
import { startIdentityRuntime } from '../../projections/identity/shared/runtime';
import type { Kernel } from '../../infra/kernel';
import { defineRoutes } from '../../infra/services';
import { membershipReads } from './membership';
import { mfaReads } from './mfa';
import { providerReads } from './providers';
import { roleReads } from './role';
import { sessionReads } from './session';

/**
 * The identity service's reads (spec 000), one plugin per concept. Its start hook loads the key
 * ring for the JWKS; it resolves no access itself: the principal comes from the gateway, or from
 * the authenticator the write plugin installed in the same process.
 */
export default defineRoutes({
  namespace: 'iam',
  start: async (kernel: Kernel) => {
    await startIdentityRuntime(kernel, tokenSettings(kernel.config.rootUrl));
  },
  register(app, kernel) {
    for (const reads of [sessionReads, mfaReads, providerReads, membershipReads, roleReads]) reads(app, kernel);
  },
});
