import { TenantEvent } from '../../domain/identity/tenant';
import type { Projection } from '../../infra/projections/projection';
import { sql } from '../../infra/projections/projection';

/** Tenants: name, slug, owner and the owner's built-in role (inline; a tenant is created once). */
export const tenants: Projection<'iam_tenants'> = {
  name: 'identity.tenants',
  version: 1,
  mode: 'inline',
  handles: ['auth.tenant.created'],
  tables: {
    iam_tenants: (t) => [
      `CREATE TABLE ${t} (tenant_id text PRIMARY KEY, name text NOT NULL, slug text NOT NULL, owner_id text NOT NULL, owner_role_id text NOT NULL, created_at timestamptz NOT NULL)`,
      `CREATE INDEX ${t.replace('.', '_').replace('rm_', '')}_slug ON ${t} (slug)`,
    ],
  },
  evolve: (stored, t) => {
    const e = TenantEvent.parse({ type: stored.type, data: stored.data });
    return e.type === 'auth.tenant.created'
      ? [
          sql(
            `INSERT INTO ${t.iam_tenants} (tenant_id, name, slug, owner_id, owner_role_id, created_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id) DO NOTHING`,
            stored.tenantId,
            e.data.name,
            e.data.slug,
            e.data.ownerId,
            e.data.ownerRoleId,
            stored.occurredAt,
          ),
        ]
      : [];
  },
};
