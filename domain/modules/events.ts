import { z } from 'zod';
import { Manifest } from './manifest';

/**
 * The module registry's events (platform.module.events, spec 002 topics table): registration, a new
 * version (PATCH), activation and deactivation for a tenant (installing activates), soft deletion
 * and the platform owner's purge. One stream per module, in the platform tenant.
 */
const ModuleRegistered = z.object({
  type: z.literal('module.registry.registered'),
  data: z.object({
    moduleId: z.string(),
    slug: z.string(),
    version: z.string(),
    manifest: Manifest,
    registeredBy: z.string(),
    registeredAt: z.string(),
  }),
});

const ModuleUpdated = z.object({
  type: z.literal('module.registry.updated'),
  data: z.object({
    moduleId: z.string(),
    slug: z.string(),
    version: z.string(),
    previousVersion: z.string(),
    manifest: Manifest,
    updatedBy: z.string(),
    updatedAt: z.string(),
  }),
});

/** the module serves the tenant: installed (first time, schemaVersion reached by its migrations) or activated again */
const ModuleActivated = z.object({
  type: z.literal('module.registry.activated'),
  data: z.object({
    moduleId: z.string(),
    slug: z.string(),
    tenantId: z.string(),
    version: z.string(),
    schemaVersion: z.number().int(),
    installed: z.boolean(),
    at: z.string(),
  }),
});

/** the module no longer serves the tenant; its tables and rows are kept */
const ModuleDeactivated = z.object({
  type: z.literal('module.registry.deactivated'),
  data: z.object({ moduleId: z.string(), slug: z.string(), tenantId: z.string(), at: z.string() }),
});

const ModuleDeleted = z.object({
  type: z.literal('module.registry.deleted'),
  data: z.object({ moduleId: z.string(), slug: z.string(), deletedBy: z.string(), at: z.string() }),
});

/**
 * A reconciliation after a migration changed the module's permissions (modules.permissions):
 * `registered` became active (new, described anew or active again), `archived` are denied from
 * now on. Every process drops what it cached of the permission catalog when it reads this from the
 * log (infra/permissions.ts), whichever process ran the migration — a CLI beside `npm start` too.
 */
const ModulePermissionsChanged = z.object({
  type: z.literal('module.registry.permissions_changed'),
  data: z.object({
    moduleId: z.string(),
    slug: z.string(),
    registered: z.array(z.string()),
    archived: z.array(z.string()),
    at: z.string(),
  }),
});

const ModulePurged = z.object({
  type: z.literal('module.registry.purged'),
  data: z.object({ moduleId: z.string(), slug: z.string(), purgedBy: z.string(), at: z.string() }),
});

export const ModuleEvent = z.discriminatedUnion('type', [
  ModuleRegistered,
  ModuleUpdated,
  ModuleActivated,
  ModuleDeactivated,
  ModuleDeleted,
  ModulePurged,
  ModulePermissionsChanged,
]);
export type ModuleEvent = z.infer<typeof ModuleEvent>;
export type ModuleRegisteredData = z.infer<typeof ModuleRegistered>['data'];
export type ModuleUpdatedData = z.infer<typeof ModuleUpdated>['data'];
export type ModuleActivatedData = z.infer<typeof ModuleActivated>['data'];
export type ModuleDeactivatedData = z.infer<typeof ModuleDeactivated>['data'];
export type ModulePermissionsChangedData = z.infer<typeof ModulePermissionsChanged>['data'];
export const moduleEventTypes = ModuleEvent.options.map((o) => o.shape.type.value);
/** the events after which a process reads the stored permissions again (a purge deletes the module's) */
export const permissionCatalogEvents = ['module.registry.permissions_changed', 'module.registry.purged'] as const;
