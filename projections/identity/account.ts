import { AccountEvent } from '../../domain/identity/account';
import { MfaEvent } from '../../domain/identity/mfa';
import type { StoredEvent } from '../../domain/shared/event';
import { assertNever } from '../../domain/shared/decider';
import type { Projection, Statement } from '../../infra/projections/projection';
import { sql } from '../../infra/projections/projection';

/**
 * Accounts and their provider links (inline: a login right after registration must see the
 * account). Accounts live in the platform pseudo-tenant. Updates are guarded by the stream version
 * (the MFA stream's own for the MFA flag), so applying an event again changes nothing.
 * session_generation counts the events that end every session of the account (password changed,
 * locked): the access loader hands it to the token check (domain/identity/access.ts).
 */
type Tables = Record<'iam_accounts' | 'iam_provider_links', string>;

const accountSql = (stored: StoredEvent<Record<string, unknown>>, e: AccountEvent, t: Tables): Statement[] => {
  const v = stored.streamVersion;
  switch (e.type) {
    case 'auth.user.created':
      return [
        sql(
          `INSERT INTO ${t.iam_accounts} (tenant_id, id, email, first_name, last_name, email_verified, status, created_at, updated_at, version)
        VALUES ($1, $2, $3, $4, $5, $6, 'active', $7, $7, $8) ON CONFLICT (tenant_id, id) DO NOTHING`,
          stored.tenantId,
          e.data.userId,
          e.data.email,
          e.data.firstName,
          e.data.lastName,
          e.data.emailVerified,
          stored.occurredAt,
          v,
        ),
      ];
    case 'auth.user.profile_updated':
      return [
        sql(
          `UPDATE ${t.iam_accounts} SET email = $3, first_name = $4, last_name = $5, avatar_url = $6, email_verified = $7, updated_at = $8, version = $9
        WHERE tenant_id = $1 AND id = $2 AND version < $9`,
          stored.tenantId,
          e.data.userId,
          e.data.email,
          e.data.firstName,
          e.data.lastName,
          e.data.avatarUrl,
          e.data.emailVerified,
          stored.occurredAt,
          v,
        ),
      ];
    case 'auth.user.email_verified':
      return [
        sql(
          `UPDATE ${t.iam_accounts} SET email_verified = true, updated_at = $3, version = $4 WHERE tenant_id = $1 AND id = $2 AND version < $4`,
          stored.tenantId,
          e.data.userId,
          stored.occurredAt,
          v,
        ),
      ];
    case 'auth.user.email_changed':
      return [
        sql(
          `UPDATE ${t.iam_accounts} SET email = $3, email_verified = true, updated_at = $4, version = $5 WHERE tenant_id = $1 AND id = $2 AND version < $5`,
          stored.tenantId,
          e.data.userId,
          e.data.email,
          stored.occurredAt,
          v,
        ),
      ];
    case 'auth.user.locked':
    case 'auth.user.unlocked':
      return [
        sql(
          // a lock ends every session of the account (an unlock does not bring them back)
          `UPDATE ${t.iam_accounts} SET status = $3, session_generation = session_generation + $6, updated_at = $4, version = $5
          WHERE tenant_id = $1 AND id = $2 AND version < $5`,
          stored.tenantId,
          e.data.userId,
          e.type === 'auth.user.locked' ? 'locked' : 'active',
          stored.occurredAt,
          v,
          e.type === 'auth.user.locked' ? 1 : 0,
        ),
      ];
    case 'auth.user.password_changed':
      return [
        sql(
          // a new password ends every session started before it
          `UPDATE ${t.iam_accounts} SET session_generation = session_generation + 1, updated_at = $3, version = $4
          WHERE tenant_id = $1 AND id = $2 AND version < $4`,
          stored.tenantId,
          e.data.userId,
          stored.occurredAt,
          v,
        ),
      ];
    case 'auth.user.provider_linked':
      return [
        sql(
          `INSERT INTO ${t.iam_provider_links} (tenant_id, id, user_id, provider_id, provider_type, external_id, email, display_name, linked_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (tenant_id, id) DO NOTHING`,
          stored.tenantId,
          e.data.linkId,
          e.data.userId,
          e.data.providerId,
          e.data.providerType,
          e.data.externalId,
          e.data.email,
          e.data.displayName,
          e.data.linkedAt,
        ),
      ];
    case 'auth.user.provider_unlinked':
      return [
        sql(`DELETE FROM ${t.iam_provider_links} WHERE tenant_id = $1 AND id = $2`, stored.tenantId, e.data.linkId),
      ];
    case 'auth.user.logged_in':
      return [];
    default:
      return assertNever(e);
  }
};

const mfaSql = (stored: StoredEvent<Record<string, unknown>>, e: MfaEvent, t: Tables): Statement[] => {
  if (e.type !== 'auth.mfa.enabled' && e.type !== 'auth.mfa.disabled') return [];
  return [
    sql(
      `UPDATE ${t.iam_accounts} SET mfa_enabled = $3, updated_at = $4, mfa_version = $5 WHERE tenant_id = $1 AND id = $2 AND mfa_version < $5`,
      stored.tenantId,
      e.data.userId,
      e.type === 'auth.mfa.enabled',
      stored.occurredAt,
      stored.streamVersion,
    ),
  ];
};

export const accounts: Projection<'iam_accounts' | 'iam_provider_links'> = {
  name: 'identity.accounts',
  version: 2,
  mode: 'inline',
  handles: [
    'auth.user.created',
    'auth.user.profile_updated',
    'auth.user.email_verified',
    'auth.user.email_changed',
    'auth.user.password_changed',
    'auth.user.locked',
    'auth.user.unlocked',
    'auth.user.provider_linked',
    'auth.user.provider_unlinked',
    'auth.mfa.enabled',
    'auth.mfa.disabled',
  ],
  tables: {
    iam_accounts: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, id text NOT NULL, email text NOT NULL, first_name text NOT NULL, last_name text NOT NULL,
        avatar_url text NOT NULL DEFAULT '', email_verified boolean NOT NULL, mfa_enabled boolean NOT NULL DEFAULT false, status text NOT NULL,
        created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, version int NOT NULL, mfa_version int NOT NULL DEFAULT 0,
        session_generation int NOT NULL DEFAULT 0, PRIMARY KEY (tenant_id, id))`,
      `CREATE INDEX ${t.replace('.', '_').replace('rm_', '')}_email ON ${t} (tenant_id, lower(email))`,
    ],
    iam_provider_links: (t) => [
      `CREATE TABLE ${t} (tenant_id text NOT NULL, id text NOT NULL, user_id text NOT NULL, provider_id text NOT NULL, provider_type text NOT NULL,
        external_id text NOT NULL, email text NOT NULL, display_name text NOT NULL, linked_at timestamptz NOT NULL, PRIMARY KEY (tenant_id, id))`,
      `CREATE INDEX ${t.replace('.', '_').replace('rm_', '')}_user ON ${t} (tenant_id, user_id)`,
    ],
  },
  evolve: (stored, t) =>
    stored.type.startsWith('auth.mfa.')
      ? mfaSql(stored, MfaEvent.parse({ type: stored.type, data: stored.data }), t)
      : accountSql(stored, AccountEvent.parse({ type: stored.type, data: stored.data }), t),
};
