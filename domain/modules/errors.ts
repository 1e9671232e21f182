import type { FieldError } from '../shared/errors';
import { defineErrors } from '../shared/errors';

/** The module registry's refusals. */
export const moduleErrors = defineErrors({
  /** the gateway's suffix for a module the caller cannot see (spec 000) */
  moduleNotFound: (detail = 'The module does not exist or is not installed for this tenant.') => ({
    status: 404,
    suffix: 'module-not-found',
    title: 'Module not found',
    detail,
  }),
  slugTaken: (slug: string) => ({
    status: 409,
    suffix: 'conflict',
    title: 'Conflict',
    detail: `A module with the slug ${slug} is registered already.`,
  }),
  invalidManifest: (errors: FieldError[]) => ({
    status: 400,
    suffix: 'validation-error',
    title: 'Validation failed',
    detail: 'The manifest is not valid.',
    errors,
  }),
  keyNotFound: () => ({ status: 404, suffix: 'not-found', title: 'Not found', detail: 'The module has no such key.' }),
  /** a module key whose module is installed for several tenants must name one (X-Module-Tenant) */
  tenantRequired: () => ({
    status: 400,
    suffix: 'validation-error',
    title: 'Validation failed',
    detail: 'The module is installed for several tenants: name one in X-Module-Tenant.',
    errors: [{ field: 'X-Module-Tenant', message: 'name the tenant the module acts for', code: 'REQUIRED' }],
  }),
});

/** The data-model layer's refusals of registry commands (install, update, migrations). */
export const registryErrors = defineErrors({
  /** an installation for a tenant the platform does not have (the tenant is in the body: 404 naming the field) */
  tenantNotFound: (tenantId: string) => ({
    status: 404,
    suffix: 'not-found',
    title: 'Not found',
    detail: `There is no tenant ${tenantId}.`,
    errors: [{ field: 'tenantId', message: 'no tenant has this id', code: 'NOT_FOUND' }],
  }),
  notInstalled: () => ({
    status: 404,
    suffix: 'module-not-found',
    title: 'Module not found',
    detail: 'The module is not installed for this tenant.',
  }),
  deleted: () => ({
    status: 404,
    suffix: 'module-not-found',
    title: 'Module not found',
    detail: 'The module was deleted.',
  }),
  versionNotNewer: (current: string, given: string) => ({
    status: 409,
    suffix: 'conflict',
    title: 'Conflict',
    detail: `A new version must be greater than ${current} (given ${given}).`,
  }),
  slugChanged: () => ({
    status: 400,
    suffix: 'validation-error',
    title: 'Validation failed',
    detail: "A new version keeps the module's slug.",
    errors: [{ field: 'slug', message: 'the slug cannot change', code: 'IMMUTABLE' }],
  }),
  appliedMigrationChanged: (version: number) => ({
    status: 400,
    suffix: 'validation-error',
    title: 'Validation failed',
    detail: `Migration ${version} is applied already and cannot change or disappear.`,
    errors: [
      { field: `migrations.${version - 1}`, message: 'an applied migration is kept as it was', code: 'IMMUTABLE' },
    ],
  }),
  /** the module's last migration failed: nothing is served until a fixed version, a retry or a forced version */
  migrationFailed: (migrationError: string) => ({
    status: 422,
    suffix: 'migration-failed',
    title: 'Migration failed',
    detail: `The module's migration failed: ${migrationError}`,
    extensions: { status: 'error', migrationError },
  }),
  migrationBusy: () => ({
    status: 409,
    suffix: 'conflict',
    title: 'Conflict',
    detail: 'Another process is migrating this module; retry shortly.',
  }),
  purgeNeedsDelete: () => ({
    status: 409,
    suffix: 'conflict',
    title: 'Conflict',
    detail: 'Delete the module before purging it.',
  }),
});
