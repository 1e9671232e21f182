import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { Manifest } from '../../domain/modules/manifest';
import type { Queryable } from '../../infra/postgres/db';

/** typed reads of the module registry (rm.modules, the platform tenant's) */
export interface ModuleRow {
  id: string; slug: string; name: string | null; version: string; description: string | null; status: string; manifest: Manifest;
  registered_by: string; registered_at: Date; updated_at: Date;
}
const COLUMNS = 'id, slug, name, version, description, status, manifest, registered_by, registered_at, updated_at';

export const moduleOf = (r: ModuleRow) => ({
  id: r.id, slug: r.slug, name: r.name, version: r.version, description: r.description, status: r.status,
  events: { publishes: r.manifest.events.publishes, subscribes: r.manifest.events.subscribes, endpoint: r.manifest.events.endpoint ?? null },
  manifest: r.manifest, registeredBy: r.registered_by, registeredAt: r.registered_at.toISOString(), updatedAt: r.updated_at.toISOString(),
});
export type ModuleView = ReturnType<typeof moduleOf>;

/** a module by id or slug */
export const findModule = async (q: Queryable, idOrSlug: string): Promise<ModuleRow | null> =>
  (await q.query<ModuleRow>(`SELECT ${COLUMNS} FROM rm.modules WHERE tenant_id = $1 AND (id = $2 OR slug = $2) ORDER BY (id = $2) DESC LIMIT 1`,
    [PLATFORM_TENANT_ID, idOrSlug])).rows[0] ?? null;

export const listModules = async (q: Queryable, o: { afterSlug?: string; limit: number }): Promise<ModuleRow[]> =>
  (await q.query<ModuleRow>(`SELECT ${COLUMNS} FROM rm.modules WHERE tenant_id = $1 AND slug > $2 ORDER BY slug LIMIT $3`,
    [PLATFORM_TENANT_ID, o.afterSlug ?? '', o.limit])).rows;

/** every registered module's slug and manifest (the bus's topic catalog: a few rows per platform) */
export const allManifests = async (q: Queryable): Promise<{ id: string; slug: string; manifest: Manifest; registered_at: Date }[]> =>
  (await q.query<{ id: string; slug: string; manifest: Manifest; registered_at: Date }>(
    'SELECT id, slug, manifest, registered_at FROM rm.modules WHERE tenant_id = $1 ORDER BY slug', [PLATFORM_TENANT_ID])).rows;
