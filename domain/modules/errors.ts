import type { FieldError } from '../shared/errors';
import { defineErrors } from '../shared/errors';

/** The module registry's refusals. */
export const moduleErrors = defineErrors({
  /** the gateway's suffix for a module the caller cannot see (spec 000) */
  moduleNotFound: (detail = 'The module does not exist or is not installed for this tenant.') => ({ status: 404, suffix: 'module-not-found', title: 'Module not found', detail }),
  slugTaken: (slug: string) => ({ status: 409, suffix: 'conflict', title: 'Conflict', detail: `A module with the slug ${slug} is registered already.` }),
  invalidManifest: (errors: FieldError[]) => ({ status: 400, suffix: 'validation-error', title: 'Validation failed', detail: 'The manifest is not valid.', errors }),
  keyNotFound: () => ({ status: 404, suffix: 'not-found', title: 'Not found', detail: 'The module has no such key.' }),
  /** a module key whose module is installed for several tenants must name one (X-Module-Tenant) */
  tenantRequired: () => ({
    status: 400, suffix: 'validation-error', title: 'Validation failed', detail: 'The module is installed for several tenants: name one in X-Module-Tenant.',
    errors: [{ field: 'X-Module-Tenant', message: 'name the tenant the module acts for', code: 'REQUIRED' }],
  }),
});
