import { registryErrors, moduleErrors } from '../../domain/modules/errors';
import type { Manifest } from '../../domain/modules/manifest';
import type { ModuleRecord } from '../../domain/modules/views';
import { moduleView } from '../../domain/modules/views';
import type { Kernel } from '../../infra/kernel';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import { usageLimits } from '../../infra/usage-limits';
import { ModuleAggregate, moduleStream } from './aggregates';
import { assertInstallationAllowed, recordInstallation } from './installations';
import { findModule } from './lookups';
import type { MigrationOutcome } from './migrate';
import { clearDirty, dropModuleSchema, forceVersion, migrateModule, schemaStateOf } from './migrate';
import { moduleRegistryChanged } from '../data/context';
import { reconcilePermissions } from './permissions';
import { manifestProblemsOf, registryMeta } from './register';

/**
 * The registry's lifecycle beyond registration (spec 002, data model): install for a tenant (runs
 * the module's migrations first), activate, deactivate (tables kept), publish a new version (PATCH:
 * migrates the installed tenants' schema), retry a failed migration, force a version, soft delete,
 * and the platform owner's purge. Migrations run outside the event transaction (DDL of their own,
 * under the module's migration lock); the registry's events are recorded once they succeeded.
 */

/** DATA_PERMISSION_RECONCILIATION_ON_MIGRATE (default true): reconcile right after a migration, else at the next start */
const reconcileOnMigrate = (kernel: Kernel): boolean =>
  (kernel.config.env.DATA_PERMISSION_RECONCILIATION_ON_MIGRATE ?? 'true') !== 'false';

const live = async (kernel: Kernel, idOrSlug: string): Promise<ModuleRecord> => {
  const found = await findModule(kernel.db, idOrSlug);
  if (!found) throw moduleErrors.moduleNotFound();
  if (found.status !== 'registered') throw registryErrors.deleted();
  return found;
};

const viewOf = async (kernel: Kernel, id: string) => {
  const found = await findModule(kernel.db, id);
  if (!found) throw moduleErrors.moduleNotFound();
  return moduleView(found, await schemaStateOf(kernel.db, found.id));
};

/** migrates, then reconciles permissions (a failed reconciliation is retried at the next start) */
const migrate = async (kernel: Kernel, m: ModuleRecord): Promise<MigrationOutcome> => {
  // the schema state moved (a version, or a failure's dirty flag): the module rows cached by every process are stale
  const outcome = await migrateModule(kernel, { id: m.id, slug: m.slug, migrations: m.manifest.migrations }).finally(
    () => moduleRegistryChanged(kernel),
  );
  if (outcome.status === 'ok' && reconcileOnMigrate(kernel)) {
    await reconcilePermissions(kernel, m).catch((err: unknown) =>
      kernel.logger.warn({ err, module: m.slug }, 'permission reconciliation failed; retried at the next start'),
    );
  }
  return outcome;
};

/** a registry command; once it committed, the module rows cached by every process are stale (its event, installations) */
const runRegistry = async <T>(
  kernel: Kernel,
  actor: string,
  traceId: string | null,
  fn: (uow: UnitOfWork) => Promise<T>,
): Promise<T> => {
  const result = await kernel.commands.run(registryMeta(actor, traceId), fn);
  await moduleRegistryChanged(kernel);
  return result;
};

export interface InstallationView {
  moduleId: string;
  slug: string;
  tenantId: string;
  status: 'active' | 'inactive';
  version: string;
  schemaVersion: number;
}

/** installs (or re-activates) the module for a tenant; its migrations run first, a failure is a 422 with migrationError */
export const installModule = async (
  kernel: Kernel,
  actor: string,
  traceId: string | null,
  idOrSlug: string,
  tenantId: string,
): Promise<InstallationView> => {
  const m = await live(kernel, idOrSlug);
  // an installation names a tenant that exists: checked before any migration runs
  // identity's tenants; a platform without identity has no registry of tenants (its tokens name them): every tenant counts there
  if (!(await kernel.people.tenantExists(kernel.db, tenantId))) throw registryErrors.tenantNotFound(tenantId);
  const outcome = await migrate(kernel, m);
  if (outcome.status === 'error') throw registryErrors.migrationFailed(outcome.migrationError ?? 'unknown error');
  return activation(kernel, actor, traceId, m, tenantId, true, outcome.version);
};

const activation = async (
  kernel: Kernel,
  actor: string,
  traceId: string | null,
  m: ModuleRecord,
  tenantId: string,
  installed: boolean,
  schemaVersion: number,
) =>
  runRegistry(kernel, actor, traceId, async (uow) => {
    const at = kernel.clock.now();
    // the installing tenant's plan limits its active modules (booked to it by billing, domain/billing/usage.ts)
    await assertInstallationAllowed(uow.tx, m.id, tenantId, await usageLimits(kernel).limitOf(tenantId, 'modules'));
    uow.decide(ModuleAggregate, await uow.load(ModuleAggregate, moduleStream(m.id), { lock: true }), {
      type: 'ActivateModule',
      data: {
        moduleId: m.id,
        slug: m.slug,
        tenantId,
        version: m.version,
        schemaVersion,
        installed,
        at: at.toISOString(),
      },
    });
    await recordInstallation(uow.tx, m.id, tenantId, 'active', at);
    return { moduleId: m.id, slug: m.slug, tenantId, status: 'active' as const, version: m.version, schemaVersion };
  });

export const activateModule = async (
  kernel: Kernel,
  actor: string,
  traceId: string | null,
  idOrSlug: string,
  tenantId: string,
): Promise<InstallationView> => {
  const m = await live(kernel, idOrSlug);
  return activation(kernel, actor, traceId, m, tenantId, false, (await schemaStateOf(kernel.db, m.id))?.version ?? 0);
};

export const deactivateModule = async (
  kernel: Kernel,
  actor: string,
  traceId: string | null,
  idOrSlug: string,
  tenantId: string,
): Promise<InstallationView> => {
  const m = await live(kernel, idOrSlug);
  return runRegistry(kernel, actor, traceId, async (uow) => {
    const at = kernel.clock.now();
    uow.decide(ModuleAggregate, await uow.load(ModuleAggregate, moduleStream(m.id), { lock: true }), {
      type: 'DeactivateModule',
      data: { moduleId: m.id, slug: m.slug, tenantId, at: at.toISOString() },
    });
    await recordInstallation(uow.tx, m.id, tenantId, 'inactive', at);
    return {
      moduleId: m.id,
      slug: m.slug,
      tenantId,
      status: 'inactive' as const,
      version: m.version,
      schemaVersion: (await schemaStateOf(uow.tx, m.id))?.version ?? 0,
    };
  });
};

const installedAnywhere = async (kernel: Kernel, moduleId: string): Promise<boolean> =>
  ((await kernel.db.query('SELECT 1 FROM modules.installations WHERE module_id = $1 LIMIT 1', [moduleId])).rowCount ??
    0) > 0;

/**
 * PATCH /modules/:id: a new version (greater semver, same slug). Applied migrations stay as they
 * were; a failed one may be replaced (the fix), which clears the dirty flag; the installed
 * tenants' schema then migrates to the new version.
 */
export const updateModule = async (
  kernel: Kernel,
  actor: string,
  traceId: string | null,
  idOrSlug: string,
  manifest: Manifest,
) => {
  const m = await live(kernel, idOrSlug);
  if (manifest.slug !== m.slug) throw registryErrors.slugChanged();
  const problems = await manifestProblemsOf(kernel, manifest);
  if (problems.length) throw moduleErrors.invalidManifest(problems);
  const state = await schemaStateOf(kernel.db, m.id);
  for (let v = 1; v <= (state?.version ?? 0); v += 1) {
    const before = m.manifest.migrations.find((x) => x.version === v);
    const after = manifest.migrations.find((x) => x.version === v);
    if (before && (!after || after.sql !== before.sql)) throw registryErrors.appliedMigrationChanged(v);
  }
  await runRegistry(kernel, actor, traceId, async (uow) => {
    uow.decide(ModuleAggregate, await uow.load(ModuleAggregate, moduleStream(m.id), { lock: true }), {
      type: 'UpdateModule',
      data: {
        moduleId: m.id,
        slug: m.slug,
        version: manifest.version,
        previousVersion: m.version,
        manifest,
        updatedBy: actor,
        updatedAt: kernel.clock.now().toISOString(),
      },
    });
  });
  if (state?.dirty) {
    await clearDirty(kernel.db, m.id, kernel.clock.now());
    await moduleRegistryChanged(kernel);
  }
  if (await installedAnywhere(kernel, m.id)) await migrate(kernel, { ...m, manifest, version: manifest.version });
  return viewOf(kernel, m.id);
};

/** the admin retry: clears the dirty flag and runs the pending migrations again */
export const retryMigrations = async (kernel: Kernel, idOrSlug: string) => {
  const m = await live(kernel, idOrSlug);
  await clearDirty(kernel.db, m.id, kernel.clock.now());
  await moduleRegistryChanged(kernel);
  await migrate(kernel, m);
  return viewOf(kernel, m.id);
};

/** `platform modules force-version <slug> <n>`: the schema is declared at version n and clean (repaired by hand) */
export const forceModuleVersion = async (kernel: Kernel, idOrSlug: string, version: number) => {
  const m = await live(kernel, idOrSlug);
  await forceVersion(kernel.db, m.id, m.slug, version, kernel.clock.now());
  await moduleRegistryChanged(kernel);
  if (reconcileOnMigrate(kernel)) await reconcilePermissions(kernel, m);
  return viewOf(kernel, m.id);
};

/** soft delete: the module serves no tenant any more; tables and rows are kept until a purge */
export const deleteModule = async (
  kernel: Kernel,
  actor: string,
  traceId: string | null,
  idOrSlug: string,
): Promise<void> => {
  const found = await findModule(kernel.db, idOrSlug);
  if (!found) throw moduleErrors.moduleNotFound();
  await runRegistry(kernel, actor, traceId, async (uow) => {
    const at = kernel.clock.now();
    uow.decide(ModuleAggregate, await uow.load(ModuleAggregate, moduleStream(found.id), { lock: true }), {
      type: 'DeleteModule',
      data: { moduleId: found.id, slug: found.slug, deletedBy: actor, at: at.toISOString() },
    });
    await uow.tx.query(`UPDATE modules.installations SET status = 'inactive', updated_at = $2 WHERE module_id = $1`, [
      found.id,
      at,
    ]);
  });
};

/** `platform modules purge <slug> --yes`: a deleted module's schema, rows, permissions and installations, gone */
export const purgeModule = async (kernel: Kernel, actor: string, idOrSlug: string): Promise<void> => {
  const found = await findModule(kernel.db, idOrSlug);
  if (!found) throw moduleErrors.moduleNotFound();
  await runRegistry(kernel, actor, null, async (uow) => {
    uow.decide(ModuleAggregate, await uow.load(ModuleAggregate, moduleStream(found.id), { lock: true }), {
      type: 'PurgeModule',
      data: { moduleId: found.id, slug: found.slug, purgedBy: actor, at: kernel.clock.now().toISOString() },
    });
    await dropModuleSchema(uow.tx, found.id, found.slug);
  });
};

export { viewOf as moduleStatusView };
