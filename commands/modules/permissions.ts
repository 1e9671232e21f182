import type { StoredPermissionRow } from '../../domain/data/access';
import { desiredPermissions, permissionChanges } from '../../domain/data/access';
import type { Manifest } from '../../domain/modules/manifest';
import type { Kernel } from '../../infra/kernel';
import { bumpPermissionCatalogEpoch, registerStoredPermissions } from '../../infra/permissions';
import { dataContext, loadModels, moduleRegistryChanged } from '../data/context';
import { ModuleAggregate, moduleStream } from './aggregates';
import { registryMeta } from './register';

/**
 * Reconciles a module's permissions with its schema after a migration (spec 002, Versioning): new
 * autoApi tables register <module>.<model>.read/write/delete, removed ones archive theirs (denied
 * even when a role still holds them). A change is recorded as module.registry.permissions_changed
 * in the same transaction, so every process learns of it through the log — a migration run by the
 * CLI beside `npm start` (no shared cache) included; the epoch bumped after the commit makes it
 * immediate where the shared cache is Redis. A failure leaves permissions_reconciled false: retried
 * at the next start or health check.
 */
export const reconcilePermissions = async (
  kernel: Kernel,
  module: { id: string; slug: string; manifest: Manifest },
): Promise<Record<string, string>> => {
  const desired = desiredPermissions(
    module.slug,
    module.manifest,
    await loadModels(kernel.db, module.slug, module.manifest),
  );
  const now = kernel.clock.now();
  const archived = await kernel.commands.run(registryMeta('system', null), async (uow) => {
    // the module's stream first: one reconciliation of a module at a time, each comparing with the last one's rows
    const loaded = await uow.load(ModuleAggregate, moduleStream(module.id), { lock: true });
    const stored = await uow.tx.query<StoredPermissionRow>(
      'SELECT key, description, status FROM modules.permissions WHERE module_id = $1',
      [module.id],
    );
    const changes = permissionChanges(stored.rows, desired);
    for (const [key, description] of Object.entries(desired)) {
      await uow.tx.query(
        `INSERT INTO modules.permissions (key, module_id, description, status, updated_at) VALUES ($1, $2, $3, 'active', $4)
        ON CONFLICT (key) DO UPDATE SET module_id = $2, description = $3, status = 'active', updated_at = $4`,
        [key, module.id, description, now],
      );
    }
    await uow.tx.query(
      `UPDATE modules.permissions SET status = 'archived', updated_at = $3
      WHERE module_id = $1 AND status = 'active' AND NOT (key = ANY($2::text[]))`,
      [module.id, Object.keys(desired), now],
    );
    await uow.tx.query('UPDATE modules.schema_state SET permissions_reconciled = true WHERE module_id = $1', [
      module.id,
    ]);
    uow.decide(ModuleAggregate, loaded, {
      type: 'RecordPermissionsChanged',
      data: { moduleId: module.id, slug: module.slug, ...changes, at: now.toISOString() },
    });
    return changes.archived;
  });
  kernel.permissions.register(module.slug, desired);
  kernel.permissions.unregister(archived);
  dataContext(kernel).catalog.drop(module.id);
  // the module's row moved (updated_at): every process's model catalog, keyed by the row, reads the archived ones again
  await moduleRegistryChanged(kernel);
  // every other process sharing the cache reads the catalog again on its next request (and every cached access is stale)
  await bumpPermissionCatalogEpoch(kernel).catch((err: unknown) =>
    kernel.logger.warn({ err, module: module.slug }, 'the permission catalog epoch could not be bumped'),
  );
  return desired;
};

/** at start (and from the health check): retries pending reconciliations and registers the stored permissions in this process */
export const loadModulePermissions = async (kernel: Kernel): Promise<void> => {
  const pending = await kernel.db.query<{ id: string; slug: string; manifest: Manifest }>(
    `SELECT m.id, m.slug, m.manifest FROM modules.schema_state s JOIN rm.modules m ON m.id = s.module_id
      WHERE NOT s.permissions_reconciled AND NOT s.dirty AND m.status = 'registered'`,
  );
  for (const m of pending.rows) {
    await reconcilePermissions(kernel, m).catch((err: unknown) =>
      kernel.logger.warn({ err, module: m.slug }, 'permission reconciliation failed; retried later'),
    );
  }
  await registerStoredPermissions(kernel);
};
