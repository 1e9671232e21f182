import type { Manifest } from '../modules/manifest';
import { registryErrors } from '../modules/errors';
import { commonErrors } from '../shared/errors';
import { grants, PLATFORM_WILDCARD } from '../shared/permissions';
import type { Model } from './catalog';
import { servable } from './catalog';
import { dataErrors } from './errors';

/** the role the data layer's queries run as, so that row-level security applies even to a superuser's connection */
export const MODULE_DATA_ROLE = 'platform_module_data';
/** the per-transaction setting the row-level security policies compare tenant_id with */
export const TENANT_SETTING = 'app.tenant_id';
/** what a data request needs to know of its module, in one row (projections/data/queries.ts moduleRowOf reads it) */
export interface ModuleRow {
  id: string;
  slug: string;
  status: string;
  version: string;
  manifest: Manifest;
  updated_at: Date;
  schema_version: number | null;
  dirty: boolean | null;
  migration_error: string | null;
  installation: string | null;
}

/** the module serves this tenant: registered, not deleted, installed and active; loaded (its last migration did not fail) */
export const gateModule = (row: ModuleRow | null): ModuleRow => {
  if (!row || row.status !== 'registered' || row.installation !== 'active') throw registryErrors.notInstalled();
  if (row.dirty) throw dataErrors.moduleInError(row.migration_error);
  return row;
};

/**
 * A module's key reaches its own module's data only: another module's paths answer as if that module
 * were not installed (404), whatever the tenant installed — a module learns nothing of the others.
 */
export const gateCaller = (caller: { source?: string }, slug: string): void => {
  if (caller.source !== undefined && caller.source !== slug) throw registryErrors.notInstalled();
};

export type Action = 'read' | 'write' | 'delete';
export const permissionOf = (slug: string, model: string, action: Action): string => `${slug}.${model}.${action}`;

/** a generated model the caller may act on: autoApi only (else not found), the permission held and not archived */
export const gateModel = (
  models: Model[],
  slug: string,
  name: string,
  action: Action,
  held: ReadonlySet<string>,
  archived: ReadonlySet<string>,
): Model => {
  const model = models.find((m) => m.name === name && servable(m));
  if (!model) throw dataErrors.modelNotFound();
  const key = permissionOf(slug, name, action);
  if (archived.has(key) && !held.has(PLATFORM_WILDCARD))
    throw commonErrors.forbidden(`The permission ${key} is archived.`);
  if (!grants(held, key)) throw commonErrors.forbidden(`The permission ${key} is required.`);
  return model;
};

/** introspection (spec 002): any read permission of the module */
export const gateIntrospection = (
  models: Model[],
  slug: string,
  held: ReadonlySet<string>,
  archived: ReadonlySet<string>,
): void => {
  const readable = models.some(
    (m) =>
      servable(m) &&
      !archived.has(permissionOf(slug, m.name, 'read')) &&
      grants(held, permissionOf(slug, m.name, 'read')),
  );
  if (!readable && !held.has(PLATFORM_WILDCARD) && !held.has(`${slug}.*`))
    throw commonErrors.forbidden(`A read permission of the module ${slug} is required.`);
};

/** the permissions a module's models and manifest register (spec 002: <module>.<model>.read/.write/.delete for autoApi tables) */
export const desiredPermissions = (slug: string, manifest: Manifest, models: Model[]): Record<string, string> => ({
  ...Object.fromEntries(
    models
      .filter(servable)
      .flatMap((m) =>
        (['read', 'write', 'delete'] as const).map((a) => [permissionOf(slug, m.name, a), `${a} ${slug} ${m.name}`]),
      ),
  ),
  ...(manifest.permissions ?? {}),
});

export interface StoredPermissionRow {
  key: string;
  description: string;
  status: 'active' | 'archived';
}

/**
 * What a reconciliation changes: the desired keys not stored active with that description
 * (registered), and the stored active keys no longer desired (archived). Empty lists: nothing to tell.
 */
export const permissionChanges = (
  stored: readonly StoredPermissionRow[],
  desired: Record<string, string>,
): { registered: string[]; archived: string[] } => {
  const active = new Map(stored.filter((p) => p.status === 'active').map((p) => [p.key, p.description]));
  return {
    registered: Object.entries(desired)
      .filter(([key, description]) => active.get(key) !== description)
      .map(([key]) => key)
      .sort(),
    archived: [...active.keys()].filter((key) => !Object.hasOwn(desired, key)).sort(),
  };
};
