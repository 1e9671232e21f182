import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { Manifest } from '../../domain/modules/manifest';
import type { ModuleRecord, SchemaStatus } from '../../domain/modules/views';
import type { Queryable } from '../../infra/postgres/db';

/** typed reads of the module registry (rm.modules, the platform tenant's) and of its keys' public part */
const COLUMNS = 'id, slug, name, version, description, status, manifest, registered_by, registered_at, updated_at';

/** a module by id or slug */
export const findModule = async (q: Queryable, idOrSlug: string): Promise<ModuleRecord | null> =>
  (
    await q.query<ModuleRecord>(
      `SELECT ${COLUMNS} FROM rm.modules WHERE tenant_id = $1 AND (id = $2 OR slug = $2) ORDER BY (id = $2) DESC LIMIT 1`,
      [PLATFORM_TENANT_ID, idOrSlug],
    )
  ).rows[0] ?? null;

export const listModules = async (q: Queryable, o: { afterSlug?: string; limit: number }): Promise<ModuleRecord[]> =>
  (
    await q.query<ModuleRecord>(
      `SELECT ${COLUMNS} FROM rm.modules WHERE tenant_id = $1 AND slug > $2 ORDER BY slug LIMIT $3`,
      [PLATFORM_TENANT_ID, o.afterSlug ?? '', o.limit],
    )
  ).rows;

/** every registered module's slug and manifest (the topic catalog) */
export const allManifests = async (
  q: Queryable,
): Promise<{ id: string; slug: string; manifest: Manifest; registered_at: Date }[]> =>
  (
    await q.query<{ id: string; slug: string; manifest: Manifest; registered_at: Date }>(
      'SELECT id, slug, manifest, registered_at FROM rm.modules WHERE tenant_id = $1 ORDER BY slug',
      [PLATFORM_TENANT_ID],
    )
  ).rows;

export interface KeyRow {
  id: string;
  created_at: Date;
  created_by: string;
  revoked_at: Date | null;
  last_used_at: Date | null;
}
/** a module's keys, never their hashes */
export const keysOf = async (q: Queryable, moduleId: string): Promise<KeyRow[]> =>
  (
    await q.query<KeyRow>(
      'SELECT id, created_at, created_by, revoked_at, last_used_at FROM modules.keys WHERE module_id = $1 ORDER BY created_at DESC, id DESC',
      [moduleId],
    )
  ).rows;

/** the data layer's state of the module's schema (modules.schema_state): version, dirty, migrationError */
export const schemaStatusOf = async (q: Queryable, moduleId: string): Promise<SchemaStatus | null> =>
  (
    await q.query<SchemaStatus>(
      'SELECT version, dirty, migration_error FROM modules.schema_state WHERE module_id = $1',
      [moduleId],
    )
  ).rows[0] ?? null;
