import { CacheEpochs } from './cache/epochs';
import type { Kernel } from './kernel';

/**
 * The modules' permissions stored in modules.permissions (registered and archived by the data
 * layer's migrations, commands/modules/permissions.ts), mirrored into a process's permission
 * registry. Any process may run a migration, so every process tracks the store: the registry's
 * current() reads it again whenever the permission catalog's epoch moved (one shared-cache read when
 * it did not; every time when the shared cache cannot be read), so a change is seen on the next
 * request in every role (gateway, write-api, read-api).
 */
interface StoredPermission {
  key: string;
  description: string;
  slug: string;
  status: 'active' | 'archived';
}

const fromStore = new WeakMap<Kernel, Set<string>>();

/** registers the active stored permissions in this process and removes the archived and deleted ones */
export const registerStoredPermissions = async (kernel: Kernel): Promise<void> => {
  const { rows } = await kernel.db.query<StoredPermission>(
    `SELECT p.key, p.description, p.status, m.slug FROM modules.permissions p JOIN rm.modules m ON m.id = p.module_id`,
  );
  const active = rows.filter((p) => p.status === 'active');
  const previous = fromStore.get(kernel) ?? new Set<string>();
  const now = new Set(active.map((p) => p.key));
  // archived ones, and those gone from the store since the last read
  kernel.permissions.unregister([...rows.map((p) => p.key), ...previous].filter((key) => !now.has(key)));
  for (const p of active) kernel.permissions.register(p.slug, { [p.key]: p.description });
  fromStore.set(kernel, now);
};

const epochsOf = new WeakMap<Kernel, CacheEpochs>();

/**
 * The epochs of access in the shared cache (namespace 'access'): identity's access cache ties each
 * entry to its user's, its tenant's and the permission catalog's epoch
 * (projections/identity/shared/runtime.ts); the catalog's is this port's, read by current() below.
 */
export const accessEpochs = (kernel: Kernel): CacheEpochs => {
  let epochs = epochsOf.get(kernel);
  if (!epochs) {
    epochs = new CacheEpochs(kernel.engines.cache, 'access');
    epochsOf.set(kernel, epochs);
  }
  return epochs;
};

/** every access depends on the catalog of registered permissions too: the built-in Owner role grants them all */
export const PERMISSION_CATALOG_SCOPE = 'permission-catalog';

const catalogBumped = new WeakMap<Kernel, Array<() => void>>();

/** `drop` runs in this process whenever the catalog's epoch is bumped here (identity drops its cached access) */
export const onPermissionCatalogBump = (kernel: Kernel, drop: () => void): void => {
  catalogBumped.set(kernel, [...(catalogBumped.get(kernel) ?? []), drop]);
};

/** the epoch of the permission catalog (current() compares it before reading the stored permissions again) */
export const permissionCatalogEpoch = (kernel: Kernel): Promise<string | null> =>
  accessEpochs(kernel).current([PERMISSION_CATALOG_SCOPE]);

/**
 * Call after the commit of a change of the registered permissions (a module's migration registered
 * or archived some): every process reads the catalog again, and every cached access is stale.
 */
export const bumpPermissionCatalogEpoch = async (kernel: Kernel): Promise<void> => {
  for (const drop of catalogBumped.get(kernel) ?? []) drop();
  await accessEpochs(kernel).bump([PERMISSION_CATALOG_SCOPE]);
};

const tracked = new WeakSet<Kernel>();

/**
 * Makes this process's registry follow the store (idempotent); the first current() reads it.
 * `changedBy` are the event types that change the store: delivered through the log, they move the
 * catalog's epoch in this process too — the way a change reaches a process that shares no cache
 * with the one that made it (`npm start` beside a CLI, roles without Redis).
 */
export const trackStoredPermissions = (kernel: Kernel, changedBy: readonly string[]): void => {
  if (tracked.has(kernel)) return;
  tracked.add(kernel);
  let seen: string | null = null;
  // a read joins one in flight only when that one started under the same epoch: one begun before
  // a change must not mark the new epoch as seen
  let reading: { epoch: string | null; done: Promise<void> } | null = null;
  kernel.permissions.trackSource(async () => {
    const epoch = await permissionCatalogEpoch(kernel).catch(() => null);
    if (epoch !== null && epoch === seen) return;
    let current = reading;
    if (current?.epoch !== epoch) {
      const started: { epoch: string | null; done: Promise<void> } = {
        epoch,
        done: registerStoredPermissions(kernel).finally(() => {
          if (reading === started) reading = null;
        }),
      };
      reading = current = started;
    }
    await current.done;
    seen = epoch;
  });
  kernel.invalidations.on(changedBy, () => bumpPermissionCatalogEpoch(kernel));
};
