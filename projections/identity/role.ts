import { RoleEvent } from '../../domain/identity/role';
import { assertNever } from '../../domain/shared/decider';
import type { Projection } from '../../infra/projections/projection';
import { sql } from '../../infra/projections/projection';

/** Roles of each tenant (inline). Updates are guarded by the stream version; a deleted role's row goes. */
export const roles: Projection<'iam_roles'> = {
  name: 'identity.roles',
  version: 1,
  mode: 'inline',
  handles: ['auth.role.created', 'auth.role.updated', 'auth.role.deleted'],
  tables: {
    iam_roles: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, id text NOT NULL, name text NOT NULL, description text NOT NULL, permissions text[] NOT NULL,
        built_in boolean NOT NULL, created_by text NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, version int NOT NULL, PRIMARY KEY (tenant_id, id))`,
    ],
  },
  evolve: (stored, t) => {
    const e = RoleEvent.parse({ type: stored.type, data: stored.data });
    const v = stored.streamVersion;
    switch (e.type) {
      case 'auth.role.created':
        return [
          sql(
            `INSERT INTO ${t.iam_roles} (tenant_id, id, name, description, permissions, built_in, created_by, created_at, updated_at, version)
          VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9) ON CONFLICT (tenant_id, id) DO NOTHING`,
            stored.tenantId,
            e.data.roleId,
            e.data.name,
            e.data.description,
            e.data.permissions,
            e.data.builtIn,
            e.data.createdBy,
            stored.occurredAt,
            v,
          ),
        ];
      case 'auth.role.updated':
        return [
          sql(
            `UPDATE ${t.iam_roles} SET name = $3, description = $4, permissions = $5, updated_at = $6, version = $7 WHERE tenant_id = $1 AND id = $2 AND version < $7`,
            stored.tenantId,
            e.data.roleId,
            e.data.name,
            e.data.description,
            e.data.permissions,
            stored.occurredAt,
            v,
          ),
        ];
      case 'auth.role.deleted':
        return [sql(`DELETE FROM ${t.iam_roles} WHERE tenant_id = $1 AND id = $2`, stored.tenantId, e.data.roleId)];
      default:
        return assertNever(e);
    }
  },
};
