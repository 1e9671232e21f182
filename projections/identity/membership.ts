import { MembershipEvent } from '../../domain/identity/membership';
import { assertNever } from '../../domain/shared/decider';
import type { Projection } from '../../infra/projections/projection';
import { sql } from '../../infra/projections/projection';

/**
 * Memberships: a user's roles and status in one tenant (inline). Updates are guarded by the stream
 * version. session_generation counts the events that end the member's sessions in the tenant (a
 * lock, a deletion): a restore or an unlock does not bring them back.
 */
export const members: Projection<'iam_members'> = {
  name: 'identity.members',
  version: 2,
  mode: 'inline',
  handles: [
    'auth.member.added',
    'auth.role.changed',
    'auth.member.deleted',
    'auth.member.restored',
    'auth.member.status_changed',
  ],
  tables: {
    iam_members: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, user_id text NOT NULL, role_ids text[] NOT NULL, status text NOT NULL, deleted_at timestamptz,
        created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, version int NOT NULL, session_generation int NOT NULL DEFAULT 0,
        PRIMARY KEY (tenant_id, user_id))`,
      `CREATE INDEX ${t.replace('.', '_').replace('rm_', '')}_user ON ${t} (user_id)`,
    ],
  },
  evolve: (stored, t) => {
    const e = MembershipEvent.parse({ type: stored.type, data: stored.data });
    const v = stored.streamVersion;
    const where = `WHERE tenant_id = $1 AND user_id = $2 AND version < $3`;
    switch (e.type) {
      case 'auth.member.added':
        return [
          sql(
            `INSERT INTO ${t.iam_members} (tenant_id, user_id, role_ids, status, created_at, updated_at, version) VALUES ($1, $2, $4, 'active', $5, $5, $3)
          ON CONFLICT (tenant_id, user_id) DO NOTHING`,
            stored.tenantId,
            e.data.userId,
            v,
            e.data.roleIds,
            stored.occurredAt,
          ),
        ];
      case 'auth.role.changed':
        return [
          sql(
            `UPDATE ${t.iam_members} SET role_ids = $4, updated_at = $5, version = $3 ${where}`,
            stored.tenantId,
            e.data.userId,
            v,
            e.data.roleIds,
            stored.occurredAt,
          ),
        ];
      case 'auth.member.deleted':
        return [
          sql(
            `UPDATE ${t.iam_members} SET status = 'pending_deletion', deleted_at = $4, session_generation = session_generation + 1, updated_at = $5, version = $3 ${where}`,
            stored.tenantId,
            e.data.userId,
            v,
            e.data.deletedAt,
            stored.occurredAt,
          ),
        ];
      case 'auth.member.restored':
        return [
          sql(
            `UPDATE ${t.iam_members} SET status = $4, deleted_at = NULL, updated_at = $5, version = $3 ${where}`,
            stored.tenantId,
            e.data.userId,
            v,
            e.data.status,
            stored.occurredAt,
          ),
        ];
      case 'auth.member.status_changed':
        return [
          sql(
            `UPDATE ${t.iam_members} SET status = $4, session_generation = session_generation + $6, updated_at = $5, version = $3 ${where}`,
            stored.tenantId,
            e.data.userId,
            v,
            e.data.status,
            stored.occurredAt,
            e.data.status === 'locked' ? 1 : 0,
          ),
        ];
      default:
        return assertNever(e);
    }
  },
};
