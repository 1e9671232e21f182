import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import { moduleErrors } from '../../domain/modules/errors';
import { MODULE_BUS_PERMISSIONS } from '../../domain/modules/manifest';
import { commonErrors } from '../../domain/shared/errors';
import type { Principal } from '../../infra/http/auth';
import type { CredentialScheme } from '../../infra/http/credentials';
import type { Kernel } from '../../infra/kernel';
import { prepared } from '../../infra/postgres/pipeline';
import type { Queryable } from '../../infra/postgres/db';

/**
 * Module keys: the credential a module calls the API with, `Authorization: Bearer pmk_<key id>.<secret>`
 * (the secret: 32 random bytes). Only HMAC-SHA256(secret) under a key derived from
 * PLATFORM_SECRET_KEY is stored; verification compares in constant time. A key acts for one tenant
 * the module is installed for: the only one, or the one named in X-Module-Tenant.
 * The bus signs the module's event deliveries with the webhook secret of its newest key.
 */
export const MODULE_KEY_PREFIX = 'pmk_';
const KEY_FORM = /^pmk_([0-9a-f]{32})\.([A-Za-z0-9_-]{43})$/;
const HASH_PURPOSE = 'modules.key-hash.v1';
const WEBHOOK_PURPOSE = 'events.webhook-signing.v1';
export const MODULE_TENANT_HEADER = 'x-module-tenant';
/** what every module key may call: the bus (scoped to its manifest and its own subscriptions by the bus) */
export const MODULE_PERMISSIONS: readonly string[] = MODULE_BUS_PERMISSIONS;

export interface IssuedKey {
  keyId: string;
  key: string;
  webhookSecret: string;
  createdAt: string;
}

/** the key, its module and the installations the call may act for, in one round trip (on every module call: prepared) */
const KEY_LOOKUP = prepared(
  'modules_key_lookup',
  `SELECT k.secret_hash, k.revoked_at, m.id AS module_id, m.slug,
      ARRAY(SELECT jsonb_array_elements_text(coalesce(m.manifest->'keyPermissions', '[]'::jsonb))) AS key_permissions,
      ARRAY(SELECT i.tenant_id FROM modules.installations i WHERE i.module_id = m.id AND i.status = 'active'
        AND ($3::text IS NULL OR i.tenant_id = $3) ORDER BY i.tenant_id LIMIT 2) AS tenants
    FROM modules.keys k JOIN rm.modules m ON m.tenant_id = $2 AND m.id = k.module_id WHERE k.id = $1`,
);

const uuidOfHex = (hex: string): string =>
  `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
const hashOf = (kernel: Kernel, secret: string): Buffer =>
  createHmac('sha256', kernel.engines.secrets.key(HASH_PURPOSE)).update(secret).digest();

/** the secret the bus signs deliveries with, derived from the key's id (so rotating the key rotates it) */
export const webhookSecretOf = (kernel: Kernel, keyId: string): string =>
  `whsec_${createHmac('sha256', kernel.engines.secrets.key(WEBHOOK_PURPOSE)).update(keyId).digest('base64url')}`;

/** a new key of the module; the key and its webhook secret are shown once, here */
export const issueKey = async (
  kernel: Kernel,
  q: Queryable,
  moduleId: string,
  createdBy: string,
): Promise<IssuedKey> => {
  const keyId = kernel.ids.next();
  const secret = randomBytes(32).toString('base64url');
  const createdAt = kernel.clock.now();
  await q.query(
    'INSERT INTO modules.keys (id, module_id, secret_hash, created_at, created_by) VALUES ($1, $2, $3, $4, $5)',
    [keyId, moduleId, hashOf(kernel, secret), createdAt, createdBy],
  );
  return {
    keyId,
    key: `${MODULE_KEY_PREFIX}${keyId.replace(/-/g, '')}.${secret}`,
    webhookSecret: webhookSecretOf(kernel, keyId),
    createdAt: createdAt.toISOString(),
  };
};

export const revokeKey = async (kernel: Kernel, q: Queryable, moduleId: string, keyId: string): Promise<void> => {
  const { rowCount } = await q.query(
    'UPDATE modules.keys SET revoked_at = coalesce(revoked_at, $3) WHERE id = $1 AND module_id = $2',
    [keyId, moduleId, kernel.clock.now()],
  );
  if (!rowCount) throw moduleErrors.keyNotFound();
};

/** the newest key that is not revoked: its webhook secret signs the module's deliveries */
export const signingKeyOf = async (q: Queryable, moduleId: string): Promise<string | null> =>
  (
    await q.query<{ id: string }>(
      'SELECT id FROM modules.keys WHERE module_id = $1 AND revoked_at IS NULL ORDER BY created_at DESC, id DESC LIMIT 1',
      [moduleId],
    )
  ).rows[0]?.id ?? null;

interface KeyLookup {
  secret_hash: Buffer;
  revoked_at: Date | null;
  module_id: string;
  slug: string;
  /** the module's active installations: the one named (if it is one), else up to two of them */
  tenants: string[];
  /** manifest.keyPermissions of the module's current version (checked at registration; null before it existed) */
  key_permissions: string[] | null;
}
const DUMMY_HASH = Buffer.alloc(32);

/** the principal of a module key, acting for one of the module's tenants */
export const moduleKeyScheme = (kernel: Kernel): CredentialScheme => {
  const touched = new Map<string, number>();
  const touch = (keyId: string) => {
    const now = Date.now();
    if ((touched.get(keyId) ?? 0) > now - 60_000) return;
    touched.set(keyId, now);
    kernel.db
      .query('UPDATE modules.keys SET last_used_at = $2 WHERE id = $1', [keyId, kernel.clock.now()])
      .catch(() => undefined);
  };
  return {
    accepts: (token) => token.startsWith(MODULE_KEY_PREFIX),
    async authenticate(token: string, headers: IncomingHttpHeaders): Promise<Principal> {
      const match = KEY_FORM.exec(token);
      if (!match) throw commonErrors.unauthorized();
      const keyId = uuidOfHex(match[1]!);
      const named = headers[MODULE_TENANT_HEADER];
      const found = (
        await kernel.db.query<KeyLookup>(
          KEY_LOOKUP([keyId, PLATFORM_TENANT_ID, typeof named === 'string' ? named : null]),
        )
      ).rows[0];
      const given = hashOf(kernel, match[2]!);
      const valid =
        timingSafeEqual(given, found?.secret_hash ?? DUMMY_HASH) && found !== undefined && found.revoked_at === null;
      if (!valid || !found) throw commonErrors.unauthorized('The module key is not valid.');
      touch(keyId);
      const tenantId = tenantOf(named, found.tenants);
      return {
        userId: `module:${found.slug}`,
        tenantId,
        email: `${found.slug}@modules.invalid`,
        roles: [],
        // the bus, and what its manifest declares for itself (read on every call: a new version applies at once)
        permissions: new Set([...MODULE_PERMISSIONS, ...(found.key_permissions ?? [])]),
        emailVerified: true,
        source: found.slug,
        moduleId: found.module_id,
      };
    },
  };
};

/** the tenant the key acts for: the one named, if the module is active there; else the module's only active tenant */
const tenantOf = (named: string | string[] | undefined, active: string[]): string => {
  if (Array.isArray(named)) throw moduleErrors.tenantRequired();
  if (named !== undefined) {
    if (!active.includes(named)) throw moduleErrors.moduleNotFound('The module is not installed for this tenant.');
    return named;
  }
  if (active.length === 0) throw moduleErrors.moduleNotFound('The module is not installed for any tenant.');
  if (active.length > 1) throw moduleErrors.tenantRequired();
  return active[0]!;
};
