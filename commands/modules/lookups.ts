import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import type { Manifest } from '../../domain/modules/manifest';
import type { ModuleRecord } from '../../domain/modules/views';
import type { Queryable } from '../../infra/postgres/db';

/** what the registry's and the bus's commands read of the registry (rm.modules, inline: exact in the command's transaction) */
const COLUMNS = 'id, slug, name, version, description, status, manifest, registered_by, registered_at, updated_at';

/** a module by id or slug */
export const findModule = async (q: Queryable, idOrSlug: string): Promise<ModuleRecord | null> =>
  (
    await q.query<ModuleRecord>(
      `SELECT ${COLUMNS} FROM rm.modules WHERE tenant_id = $1 AND (id = $2 OR slug = $2) ORDER BY (id = $2) DESC LIMIT 1`,
      [PLATFORM_TENANT_ID, idOrSlug],
    )
  ).rows[0] ?? null;

/** every registered module's slug and manifest (the bus's topic catalog: a few rows per platform) */
export const allManifests = async (
  q: Queryable,
): Promise<{ id: string; slug: string; manifest: Manifest; registered_at: Date }[]> =>
  (
    await q.query<{ id: string; slug: string; manifest: Manifest; registered_at: Date }>(
      'SELECT id, slug, manifest, registered_at FROM rm.modules WHERE tenant_id = $1 ORDER BY slug',
      [PLATFORM_TENANT_ID],
    )
  ).rows;
