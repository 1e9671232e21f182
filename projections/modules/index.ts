import { ModuleEvent, moduleEventTypes } from '../../domain/modules/events';
import { defineProjections } from '../../infra/services';
import type { Projection } from '../../infra/projections/projection';
import { sql } from '../../infra/projections/projection';

/**
 * The module registry (GET /modules, the module keys' principal, the bus's topics and manifests):
 * inline, so a module answers right after it is registered. One row per module, in the platform
 * tenant (the registry is the platform's, not a tenant's).
 */
export const modulesProjection: Projection<'modules'> = {
  name: 'modules.registry',
  version: 1,
  mode: 'inline',
  handles: moduleEventTypes,
  tables: {
    modules: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, id text NOT NULL, slug text NOT NULL, name text, version text NOT NULL, description text,
        status text NOT NULL, manifest jsonb NOT NULL, registered_by text NOT NULL, registered_at timestamptz NOT NULL, updated_at timestamptz NOT NULL,
        stream_version int NOT NULL, PRIMARY KEY (tenant_id, id))`,
      // one module per slug: the handler checks under a lock, this is the last wall
      `CREATE UNIQUE INDEX ON ${t} (tenant_id, slug)`,
    ],
  },
  evolve: (stored, t) => {
    const e = ModuleEvent.parse({ type: stored.type, data: stored.data });
    switch (e.type) {
      case 'module.registry.registered': {
        const d = e.data;
        return [
          sql(
            `INSERT INTO ${t.modules} (tenant_id, id, slug, name, version, description, status, manifest, registered_by, registered_at, updated_at, stream_version)
          VALUES ($1, $2, $3, $4, $5, $6, 'registered', $7::jsonb, $8, $9, $9, $10) ON CONFLICT (tenant_id, id) DO NOTHING`,
            stored.tenantId,
            d.moduleId,
            d.slug,
            d.manifest.name ?? null,
            d.version,
            d.manifest.description ?? null,
            JSON.stringify(d.manifest),
            d.registeredBy,
            d.registeredAt,
            stored.streamVersion,
          ),
        ];
      }
      case 'module.registry.updated': {
        const d = e.data;
        return [
          sql(
            `UPDATE ${t.modules} SET version = $3, manifest = $4::jsonb, name = $5, description = $6, updated_at = $7, stream_version = $8
          WHERE tenant_id = $1 AND id = $2 AND stream_version < $8`,
            stored.tenantId,
            d.moduleId,
            d.version,
            JSON.stringify(d.manifest),
            d.manifest.name ?? null,
            d.manifest.description ?? null,
            d.updatedAt,
            stored.streamVersion,
          ),
        ];
      }
      case 'module.registry.deleted':
        return [
          sql(
            `UPDATE ${t.modules} SET status = 'deleted', updated_at = $3, stream_version = $4 WHERE tenant_id = $1 AND id = $2 AND stream_version < $4`,
            stored.tenantId,
            e.data.moduleId,
            e.data.at,
            stored.streamVersion,
          ),
        ];
      // a purge frees the slug: the module is gone from the registry (its stream keeps the history)
      case 'module.registry.purged':
        return [sql(`DELETE FROM ${t.modules} WHERE tenant_id = $1 AND id = $2`, stored.tenantId, e.data.moduleId)];
      // a tenant's installation is the registry's operational row (modules.installations), written by the command;
      // the permissions move updated_at too, so every process's model catalog (keyed by the row) reads the archived ones again
      case 'module.registry.activated':
      case 'module.registry.deactivated':
      case 'module.registry.permissions_changed':
        return [
          sql(
            `UPDATE ${t.modules} SET updated_at = $3, stream_version = $4 WHERE tenant_id = $1 AND id = $2 AND stream_version < $4`,
            stored.tenantId,
            e.data.moduleId,
            e.data.at,
            stored.streamVersion,
          ),
        ];
    }
  },
};

export default defineProjections({ projections: [modulesProjection] });
