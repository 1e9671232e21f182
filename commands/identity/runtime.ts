import { commonErrors } from '../../domain/shared/errors';
import { OWNER_ROLE, PLATFORM_TENANT_ID, LIFETIMES } from '../../domain/identity/constants';
import { CacheEpochs } from '../../infra/cache/epochs';
import type { Authenticator, Principal } from '../../infra/http/auth';
import type { PublishedEvent } from '../../infra/invalidations';
import type { Kernel } from '../../infra/kernel';
import type { Queryable } from '../../infra/postgres/db';
import { inTransaction } from '../../infra/postgres/db';
import type { KeyRing, PersistedSigningKey } from '../../infra/security/jwt';
import { exportKeyRing, importKeyRing, KeyRing as Ring } from '../../infra/security/jwt';
import { RecoveryCodeHasher } from '../../infra/security/recovery-codes';
import { SecretBox } from '../../infra/security/secret-box';
import { WorkLimiter } from '../../infra/security/work-limiter';
import { ownerGrants } from '../../projections/identity/queries';

/**
 * What the identity service keeps per process: the signing-key ring (persisted sealed in
 * identity.signing_keys), the secret boxes, the recovery-code hasher, and a short cache of the
 * access (roles, permissions, status, email verified) of user+tenant pairs. A change of access
 * takes effect on the next request in every process: the command bumps the user's or tenant's
 * access epoch in the shared cache after its commit (bumpAccessEpoch), every lookup compares
 * epochs (one MGET), and the events that change access, delivered through the log, drop the
 * entries of every process (ACCESS_EVENTS); the TTL is only the safety net. With the shared cache
 * unreachable nothing is served from the cache (docs/decisions.md).
 */
export interface IdentityRuntime {
  ring: KeyRing;
  jwtBox: SecretBox;
  /** TOTP secrets and the sealed successor pairs of refresh tokens */
  box: SecretBox;
  recovery: RecoveryCodeHasher;
  /** argon2id hashing and verification: bounded per account and process-wide (one caller cannot starve the others) */
  passwordWork: WorkLimiter;
  issuer: string;
  audience: string;
  /** refresh grace window; tests may shorten it */
  graceMs: number;
  /** how long a cached access is served while its epochs are unchanged; tests may change it */
  accessCacheMs: number;
  invalidate(userId?: string, tenantId?: string): void;
  resolveAccess(userId: string, tenantId: string): Promise<Access | null>;
}

export interface Access {
  userId: string;
  tenantId: string;
  email: string;
  emailVerified: boolean;
  roles: string[];
  permissions: Set<string>;
}

const ACCESS_CACHE_MS = 5_000;
const EPOCH_WARNING_INTERVAL_MS = 60_000;
const EPOCH_RETRY_MS = 1_000;
const RING_RELOAD_MS = 60_000;
const KEY_MAX_AGE_S = 90 * 24 * 3600;
const SIGNING_KEYS_LOCK = 7_303_100;

const runtimes = new WeakMap<Kernel, Promise<IdentityRuntime>>();
const started = new WeakMap<Kernel, IdentityRuntime>();

/** the runtime of a started identity service */
export const identity = (kernel: Kernel): IdentityRuntime => {
  const rt = started.get(kernel);
  if (!rt) throw commonErrors.serviceUnavailable('The identity service is starting.');
  return rt;
};

/** idempotent: the write and read plugins both call it from their start hooks */
export const startIdentity = (kernel: Kernel): Promise<IdentityRuntime> => {
  let pending = runtimes.get(kernel);
  if (!pending) {
    pending = build(kernel);
    runtimes.set(kernel, pending);
  }
  return pending;
};

const ringOptions = (kernel: Kernel) => ({
  issuer: `${kernel.config.rootUrl}/v1`, audience: 'platform', maxTokenLifetimeSeconds: LIFETIMES.impersonationSeconds,
  now: () => kernel.clock.now().getTime(),
});

const build = async (kernel: Kernel): Promise<IdentityRuntime> => {
  const jwtBox = new SecretBox([{ id: 'k1', key: kernel.engines.secrets.key('identity.jwt.v1') }]);
  const box = new SecretBox([{ id: 'k1', key: kernel.engines.secrets.key('identity.secrets.v1') }]);
  const recovery = new RecoveryCodeHasher([{ id: 'k1', key: kernel.engines.secrets.key('identity.recovery-codes.v1') }]);
  let ring = await loadRing(kernel, jwtBox);
  const cache = new Map<string, { at: number; epoch: string; access: Access | null }>();
  const epochs = accessEpochs(kernel);
  let epochWarnedAt = Number.NEGATIVE_INFINITY;
  let epochsDownUntil = 0;
  /** the epochs of the pair, or null (do not cache) when the shared cache cannot be read */
  const epochOf = async (userId: string, tenantId: string): Promise<string | null> => {
    // after a failure the shared cache is left alone for a second: a Redis that hangs must not add its timeout to every request
    if (Date.now() < epochsDownUntil) return null;
    try {
      return await epochs.current(epochScopes({ userId, tenantId }));
    } catch (error) {
      epochsDownUntil = Date.now() + EPOCH_RETRY_MS;
      if (Date.now() - epochWarnedAt > EPOCH_WARNING_INTERVAL_MS) {
        epochWarnedAt = Date.now();
        kernel.logger.warn({ err: error }, 'access epochs unreadable (shared cache unreachable); access is read from PostgreSQL on every request meanwhile');
      }
      return null;
    }
  };
  const rt: IdentityRuntime = {
    get ring() { return ring; },
    jwtBox, box, recovery,
    // two hashes at once per core pair leaves libuv's other threads to file and DNS work
    passwordWork: new WorkLimiter({ concurrency: 2, perKey: 2, maxQueue: 64 }),
    issuer: ringOptions(kernel).issuer,
    audience: 'platform',
    graceMs: LIFETIMES.refreshGraceMs,
    accessCacheMs: ACCESS_CACHE_MS,
    invalidate(userId, tenantId) {
      for (const key of [...cache.keys()]) {
        const [u, t] = key.split('|');
        if ((userId === undefined || u === userId) && (tenantId === undefined || t === tenantId)) cache.delete(key);
      }
    },
    async resolveAccess(userId, tenantId) {
      const key = `${userId}|${tenantId}`;
      const now = Date.now();
      // read before the access itself: a change committed in between is loaded now and still
      // bumps the epoch after, so the worst case is one reload too many, never a stale hit
      const epoch = await epochOf(userId, tenantId);
      const hit = cache.get(key);
      if (hit && epoch !== null && hit.epoch === epoch && now - hit.at < rt.accessCacheMs) return hit.access;
      const access = await loadAccess(kernel, kernel.db, userId, tenantId);
      if (epoch === null) cache.delete(key);
      else cache.set(key, { at: now, epoch, access });
      if (cache.size > 50_000) cache.delete(cache.keys().next().value!);
      return access;
    },
  };
  kernel.invalidations.on(ACCESS_EVENTS, (event) => {
    const scope = accessScopeOf(event);
    rt.invalidate(scope.userId, scope.tenantId);
  });
  const timer = setInterval(() => {
    loadRing(kernel, jwtBox).then((r) => { ring = r; }, (error: unknown) => kernel.logger.warn({ err: error }, 'reloading the signing keys failed'));
  }, RING_RELOAD_MS);
  timer.unref();
  kernel.onClose('identity', async () => clearInterval(timer));
  kernel.authenticator = authenticator(rt, kernel);
  started.set(kernel, rt);
  return rt;
};

/**
 * The events that change an access (identity's read models are inline, so the change is readable
 * once they commit). Account events concern the user in every tenant, membership events the user
 * in one tenant, role definition events every member of the tenant.
 */
export const ACCESS_EVENTS = [
  'auth.user.email_verified', 'auth.user.password_changed', 'auth.user.locked', 'auth.user.unlocked', 'auth.user.profile_updated',
  'auth.member.added', 'auth.role.changed', 'auth.member.deleted', 'auth.member.restored', 'auth.member.status_changed',
  'auth.role.updated', 'auth.role.deleted',
] as const;

export interface AccessScope { userId?: string; tenantId?: string }

const accessScopeOf = (event: PublishedEvent): AccessScope => {
  const { userId, tenantId } = event.data as { userId?: string; tenantId?: string };
  if (event.type.startsWith('auth.user.')) return { userId };
  if (event.type === 'auth.role.updated' || event.type === 'auth.role.deleted') return { tenantId };
  return { userId, tenantId };
};

const epochsOf = new WeakMap<Kernel, CacheEpochs>();
const accessEpochs = (kernel: Kernel): CacheEpochs => {
  let epochs = epochsOf.get(kernel);
  if (!epochs) {
    epochs = new CacheEpochs(kernel.engines.cache, 'access');
    epochsOf.set(kernel, epochs);
  }
  return epochs;
};

/** a user's epoch covers them in every tenant; a tenant's covers every member */
const epochScopes = (scope: AccessScope): string[] => [
  ...(scope.userId ? [`u:${scope.userId}`] : []), ...(scope.tenantId ? [`t:${scope.tenantId}`] : []),
];

/**
 * Call after the commit of a command that changes access, before it answers (in a command:
 * `uow.afterCommit(() => bumpAccessEpoch(kernel, { userId }))`): this process's entries go at
 * once, and every process's next lookup sees the new epoch. Throws when the shared cache is
 * unreachable (the runner logs it; the log-delivered invalidation still follows).
 */
export const bumpAccessEpoch = async (kernel: Kernel, scope: AccessScope): Promise<void> => {
  started.get(kernel)?.invalidate(scope.userId, scope.tenantId);
  await accessEpochs(kernel).bump(epochScopes(scope));
};

/** Loads the ring; creates the first key when there is none and rotates a key older than 90 days (one process at a time). */
const loadRing = async (kernel: Kernel, jwtBox: SecretBox): Promise<KeyRing> => inTransaction(kernel.db, async (tx) => {
  await tx.query('SELECT pg_advisory_xact_lock($1)', [SIGNING_KEYS_LOCK]);
  const { rows } = await tx.query<{ kid: string; created_at: string; activates_at: string; retired_at: string | null; public_jwk: PersistedSigningKey['publicJwk']; sealed_private_jwk: string }>(
    'SELECT kid, created_at, activates_at, retired_at, public_jwk, sealed_private_jwk FROM identity.signing_keys ORDER BY activates_at');
  const options = ringOptions(kernel);
  const ring = rows.length === 0 ? await Ring.generate(options) : await importKeyRing(rows.map((r) => ({
    kid: r.kid, createdAt: Number(r.created_at), activatesAt: Number(r.activates_at), retiredAt: r.retired_at === null ? null : Number(r.retired_at),
    publicJwk: r.public_jwk, sealedPrivateJwk: r.sealed_private_jwk,
  })), jwtBox, options);
  const newest = ring.entries().at(-1);
  const nowS = Math.floor(kernel.clock.now().getTime() / 1000);
  let changed = rows.length === 0;
  if (newest && nowS - newest.createdAt > KEY_MAX_AGE_S) {
    // published at once, signing after two reload intervals so every instance knows it first
    await ring.rotate({ activateAfterSeconds: Math.ceil((2 * RING_RELOAD_MS) / 1000) });
    changed = true;
  }
  const pruned = ring.prune();
  if (pruned.length) await tx.query('DELETE FROM identity.signing_keys WHERE kid = ANY($1)', [pruned]);
  if (changed) await saveRing(tx, ring, jwtBox);
  return ring;
});

export const saveRing = async (q: Queryable, ring: KeyRing, jwtBox: SecretBox): Promise<void> => {
  for (const k of await exportKeyRing(ring, jwtBox)) {
    await q.query(`INSERT INTO identity.signing_keys (kid, created_at, activates_at, retired_at, public_jwk, sealed_private_jwk) VALUES ($1, $2, $3, $4, $5, $6)
      ON CONFLICT (kid) DO UPDATE SET retired_at = EXCLUDED.retired_at`, [k.kid, k.createdAt, k.activatesAt, k.retiredAt, JSON.stringify(k.publicJwk), k.sealedPrivateJwk]);
  }
};

/** what the built-in Owner role grants: every registered permission (also of modules installed later) but the platform owner's */
export const ownerPermissions = (kernel: Kernel): string[] => ownerGrants(kernel.permissions.list().map((p) => p.key));

/**
 * The access of a user in a tenant: active account, active membership, the roles held and the
 * union of their permissions. The built-in Owner role holds every registered permission but the
 * platform owner's, also those of modules installed after the tenant was created. null: no access.
 */
export const loadAccess = async (kernel: Kernel, q: Queryable, userId: string, tenantId: string): Promise<Access | null> => {
  const { rows } = await q.query<{ email: string; email_verified: boolean; account_status: string; member_status: string; name: string | null; permissions: string[] | null; built_in: boolean | null }>(
    `SELECT a.email, a.email_verified, a.status AS account_status, m.status AS member_status, r.name, r.permissions, r.built_in
       FROM rm.iam_members m
       JOIN rm.iam_accounts a ON a.tenant_id = $3 AND a.id = m.user_id
       LEFT JOIN rm.iam_roles r ON r.tenant_id = m.tenant_id AND r.id = ANY (m.role_ids)
      WHERE m.tenant_id = $1 AND m.user_id = $2`, [tenantId, userId, PLATFORM_TENANT_ID]);
  const first = rows[0];
  if (!first || first.account_status !== 'active' || first.member_status !== 'active') return null;
  const permissions = new Set<string>();
  const roles: string[] = [];
  for (const row of rows) {
    if (row.name === null) continue;
    roles.push(row.name);
    const granted = row.built_in && row.name === OWNER_ROLE && tenantId !== PLATFORM_TENANT_ID ? ownerPermissions(kernel) : row.permissions ?? [];
    for (const p of granted) permissions.add(p);
  }
  return { userId, tenantId, email: first.email, emailVerified: first.email_verified, roles: roles.sort(), permissions };
};

/** why a token was refused, at debug level: a bare 401 must be explainable from the logs (e.g. an issuer mismatch between roles) */
const logRefusal = (kernel: Kernel, reason: string, error?: unknown): void => {
  const cause = error instanceof Error ? (error.cause ?? error) : undefined;
  kernel.logger.debug({ reason, cause: cause instanceof Error ? `${cause.name}: ${cause.message}` : undefined }, 'access token refused');
};

const authenticator = (rt: IdentityRuntime, kernel: Kernel): Authenticator => ({
  async authenticate(token) {
    const claims = await rt.ring.verify(token).catch((error: unknown) => {
      logRefusal(kernel, `the token did not verify (expected issuer ${rt.issuer}, audience ${rt.audience}, ES256 with a known kid)`, error);
      throw error;
    });
    const access = await rt.resolveAccess(claims.sub, claims.tenantId);
    if (!access) {
      logRefusal(kernel, 'the account or its membership of the tenant is not active');
      throw commonErrors.unauthorized();
    }
    const principal: Principal = {
      userId: claims.sub, tenantId: claims.tenantId, email: access.email, roles: access.roles, permissions: access.permissions,
      emailVerified: access.emailVerified, ...(claims.act ? { impersonatorId: claims.act.sub } : {}),
    };
    return principal;
  },
});
