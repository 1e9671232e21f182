import { defineProjections } from '../../infra/modules';
import type { Projection } from '../../infra/projections/projection';
import { sql } from '../../infra/projections/projection';

/**
 * Identity read models, all inline (a login right after registration must see the account).
 * Accounts live in the platform pseudo-tenant; memberships, roles and tenants in their tenant.
 * Updates are guarded by the stream version so a replay changes nothing.
 */
type D = Record<string, unknown>;
const s = (d: D, k: string) => d[k] as string;

export const accounts: Projection<'iam_accounts' | 'iam_provider_links'> = {
  name: 'identity.accounts', version: 1, mode: 'inline',
  handles: ['auth.user.created', 'auth.user.profile_updated', 'auth.user.email_verified', 'auth.user.email_changed', 'auth.user.locked', 'auth.user.unlocked',
    'auth.user.provider_linked', 'auth.user.provider_unlinked', 'auth.mfa.enabled', 'auth.mfa.disabled'],
  tables: {
    iam_accounts: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, id text NOT NULL, email text NOT NULL, first_name text NOT NULL, last_name text NOT NULL,
        avatar_url text NOT NULL DEFAULT '', email_verified boolean NOT NULL, mfa_enabled boolean NOT NULL DEFAULT false, status text NOT NULL,
        created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, version int NOT NULL, mfa_version int NOT NULL DEFAULT 0, PRIMARY KEY (tenant_id, id))`,
      `CREATE INDEX ${t.replace('.', '_').replace('rm_', '')}_email ON ${t} (tenant_id, lower(email))`,
    ],
    iam_provider_links: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, id text NOT NULL, user_id text NOT NULL, provider_id text NOT NULL, provider_type text NOT NULL,
        external_id text NOT NULL, email text NOT NULL, display_name text NOT NULL, linked_at timestamptz NOT NULL, PRIMARY KEY (tenant_id, id))`,
      `CREATE INDEX ${t.replace('.', '_').replace('rm_', '')}_user ON ${t} (tenant_id, user_id)`,
    ],
  },
  evolve: (e, t) => {
    const d = e.data;
    const v = e.streamVersion;
    switch (e.type) {
      case 'auth.user.created':
        return [sql(`INSERT INTO ${t.iam_accounts} (tenant_id, id, email, first_name, last_name, email_verified, status, created_at, updated_at, version)
          VALUES ($1, $2, $3, $4, $5, $6, 'active', $7, $7, $8) ON CONFLICT (tenant_id, id) DO NOTHING`,
        e.tenantId, s(d, 'userId'), s(d, 'email'), s(d, 'firstName'), s(d, 'lastName'), d.emailVerified, e.occurredAt, v)];
      case 'auth.user.profile_updated':
        return [sql(`UPDATE ${t.iam_accounts} SET email = $3, first_name = $4, last_name = $5, avatar_url = $6, email_verified = $7, updated_at = $8, version = $9
          WHERE tenant_id = $1 AND id = $2 AND version < $9`, e.tenantId, s(d, 'userId'), s(d, 'email'), s(d, 'firstName'), s(d, 'lastName'), s(d, 'avatarUrl'), d.emailVerified, e.occurredAt, v)];
      case 'auth.user.email_verified':
        return [sql(`UPDATE ${t.iam_accounts} SET email_verified = true, updated_at = $3, version = $4 WHERE tenant_id = $1 AND id = $2 AND version < $4`, e.tenantId, s(d, 'userId'), e.occurredAt, v)];
      case 'auth.user.email_changed':
        return [sql(`UPDATE ${t.iam_accounts} SET email = $3, email_verified = true, updated_at = $4, version = $5 WHERE tenant_id = $1 AND id = $2 AND version < $5`,
          e.tenantId, s(d, 'userId'), s(d, 'email'), e.occurredAt, v)];
      case 'auth.user.locked':
      case 'auth.user.unlocked':
        return [sql(`UPDATE ${t.iam_accounts} SET status = $3, updated_at = $4, version = $5 WHERE tenant_id = $1 AND id = $2 AND version < $5`,
          e.tenantId, s(d, 'userId'), e.type === 'auth.user.locked' ? 'locked' : 'active', e.occurredAt, v)];
      case 'auth.user.provider_linked':
        return [sql(`INSERT INTO ${t.iam_provider_links} (tenant_id, id, user_id, provider_id, provider_type, external_id, email, display_name, linked_at)
          VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (tenant_id, id) DO NOTHING`,
        e.tenantId, s(d, 'linkId'), s(d, 'userId'), s(d, 'providerId'), s(d, 'providerType'), s(d, 'externalId'), s(d, 'email'), s(d, 'displayName'), s(d, 'linkedAt'))];
      case 'auth.user.provider_unlinked':
        return [sql(`DELETE FROM ${t.iam_provider_links} WHERE tenant_id = $1 AND id = $2`, e.tenantId, s(d, 'linkId'))];
      case 'auth.mfa.enabled':
      case 'auth.mfa.disabled':
        return [sql(`UPDATE ${t.iam_accounts} SET mfa_enabled = $3, updated_at = $4, mfa_version = $5 WHERE tenant_id = $1 AND id = $2 AND mfa_version < $5`,
          e.tenantId, s(d, 'userId'), e.type === 'auth.mfa.enabled', e.occurredAt, v)];
      default:
        return [];
    }
  },
};

export const members: Projection<'iam_members'> = {
  name: 'identity.members', version: 1, mode: 'inline',
  handles: ['auth.member.added', 'auth.role.changed', 'auth.member.deleted', 'auth.member.restored', 'auth.member.status_changed'],
  tables: {
    iam_members: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, user_id text NOT NULL, role_ids text[] NOT NULL, status text NOT NULL, deleted_at timestamptz,
        created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, version int NOT NULL, PRIMARY KEY (tenant_id, user_id))`,
      `CREATE INDEX ${t.replace('.', '_').replace('rm_', '')}_user ON ${t} (user_id)`,
    ],
  },
  evolve: (e, t) => {
    const d = e.data;
    const v = e.streamVersion;
    const where = `WHERE tenant_id = $1 AND user_id = $2 AND version < $3`;
    switch (e.type) {
      case 'auth.member.added':
        return [sql(`INSERT INTO ${t.iam_members} (tenant_id, user_id, role_ids, status, created_at, updated_at, version) VALUES ($1, $2, $4, 'active', $5, $5, $3)
          ON CONFLICT (tenant_id, user_id) DO NOTHING`, e.tenantId, s(d, 'userId'), v, d.roleIds, e.occurredAt)];
      case 'auth.role.changed':
        return [sql(`UPDATE ${t.iam_members} SET role_ids = $4, updated_at = $5, version = $3 ${where}`, e.tenantId, s(d, 'userId'), v, d.roleIds, e.occurredAt)];
      case 'auth.member.deleted':
        return [sql(`UPDATE ${t.iam_members} SET status = 'pending_deletion', deleted_at = $4, updated_at = $5, version = $3 ${where}`, e.tenantId, s(d, 'userId'), v, s(d, 'deletedAt'), e.occurredAt)];
      case 'auth.member.restored':
        return [sql(`UPDATE ${t.iam_members} SET status = COALESCE($4, 'active'), deleted_at = NULL, updated_at = $5, version = $3 ${where}`, e.tenantId, s(d, 'userId'), v, s(d, 'status'), e.occurredAt)];
      case 'auth.member.status_changed':
        return [sql(`UPDATE ${t.iam_members} SET status = $4, updated_at = $5, version = $3 ${where}`, e.tenantId, s(d, 'userId'), v, s(d, 'status'), e.occurredAt)];
      default:
        return [];
    }
  },
};

export const roles: Projection<'iam_roles'> = {
  name: 'identity.roles', version: 1, mode: 'inline',
  handles: ['auth.role.created', 'auth.role.updated', 'auth.role.deleted'],
  tables: {
    iam_roles: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, id text NOT NULL, name text NOT NULL, description text NOT NULL, permissions text[] NOT NULL,
        built_in boolean NOT NULL, created_by text NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, version int NOT NULL, PRIMARY KEY (tenant_id, id))`,
    ],
  },
  evolve: (e, t) => {
    const d = e.data;
    const v = e.streamVersion;
    switch (e.type) {
      case 'auth.role.created':
        return [sql(`INSERT INTO ${t.iam_roles} (tenant_id, id, name, description, permissions, built_in, created_by, created_at, updated_at, version)
          VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9) ON CONFLICT (tenant_id, id) DO NOTHING`,
        e.tenantId, s(d, 'roleId'), s(d, 'name'), s(d, 'description'), d.permissions, d.builtIn, s(d, 'createdBy'), e.occurredAt, v)];
      case 'auth.role.updated':
        return [sql(`UPDATE ${t.iam_roles} SET name = $3, description = $4, permissions = $5, updated_at = $6, version = $7 WHERE tenant_id = $1 AND id = $2 AND version < $7`,
          e.tenantId, s(d, 'roleId'), s(d, 'name'), s(d, 'description'), d.permissions, e.occurredAt, v)];
      case 'auth.role.deleted':
        return [sql(`DELETE FROM ${t.iam_roles} WHERE tenant_id = $1 AND id = $2`, e.tenantId, s(d, 'roleId'))];
      default:
        return [];
    }
  },
};

export const tenants: Projection<'iam_tenants'> = {
  name: 'identity.tenants', version: 1, mode: 'inline',
  handles: ['auth.tenant.created'],
  tables: {
    iam_tenants: (t) => [
      `CREATE TABLE ${t} (tenant_id text PRIMARY KEY, name text NOT NULL, slug text NOT NULL, owner_id text NOT NULL, owner_role_id text NOT NULL, created_at timestamptz NOT NULL)`,
      `CREATE INDEX ${t.replace('.', '_').replace('rm_', '')}_slug ON ${t} (slug)`,
    ],
  },
  evolve: (e, t) => {
    const d = e.data;
    return e.type === 'auth.tenant.created'
      ? [sql(`INSERT INTO ${t.iam_tenants} (tenant_id, name, slug, owner_id, owner_role_id, created_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id) DO NOTHING`,
        e.tenantId, s(d, 'name'), s(d, 'slug'), s(d, 'ownerId'), s(d, 'ownerRoleId'), e.occurredAt)]
      : [];
  },
};

export default defineProjections({ projections: [accounts, members, roles, tenants] });
