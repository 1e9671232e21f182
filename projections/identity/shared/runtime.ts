import { commonErrors } from '../../../domain/shared/errors';
import type { Authenticator, Principal } from '../../../infra/http/auth';
import type { PublishedEvent } from '../../../infra/invalidations';
import type { Kernel } from '../../../infra/kernel';
import { accessEpochs, onPermissionCatalogBump, PERMISSION_CATALOG_SCOPE } from '../../../infra/permissions';
import type { Queryable } from '../../../infra/postgres/db';
import { inTransaction } from '../../../infra/postgres/db';
import type { KeyRing, PersistedSigningKey } from '../../../infra/security/jwt';
import { exportKeyRing, importKeyRing, KeyRing as Ring } from '../../../infra/security/jwt';
import { RecoveryCodeHasher } from '../../../infra/security/recovery-codes';
import { SecretBox } from '../../../infra/security/secret-box';
import { WorkLimiter } from '../../../infra/security/work-limiter';
import type { MemberAccess } from '../../../domain/identity/access';

/**
 * What an identity service keeps per process, whatever the context that issues the tokens: the
 * signing-key ring (persisted sealed in identity.signing_keys, rotated after 90 days), the secret
 * boxes, the recovery-code hasher, the bound on password hashing, and a short cache of the access
 * (roles, permissions, status, email verified) of user+tenant pairs behind the kernel's
 * authenticator. A change of access takes effect on the next request in every process: the command
 * bumps the user's or tenant's access epoch in the shared cache after its commit
 * (bumpAccessEpoch), every lookup compares epochs (one MGET), and the events that change access,
 * delivered through the log, drop the entries of every process; the TTL is only the safety net.
 * With the shared cache unreachable nothing is served from the cache (docs/decisions.md).
 *
 * What is the issuing context's own arrives as options: issuer, audience and lifetimes, which
 * events change an access, and how an access is loaded (a process that only publishes the keys —
 * the read API — has no loader and installs no authenticator).
 */
/** a member's access as the access cache keeps it (domain/identity/access.ts) */
export type Access = MemberAccess;

/** the access of a user in a tenant, read in `q` (a transaction when a command asks); null: no access */
export type AccessLoader = (q: Queryable, userId: string, tenantId: string) => Promise<Access | null>;

export interface AccessScope {
  userId?: string;
  tenantId?: string;
}

/** whose cached access an event drops: its user's in every tenant, every member's of its tenant, or its user's in its tenant */
export type AccessEventScope = 'user' | 'tenant' | 'member';

export interface IdentityRuntimeOptions {
  issuer: string;
  audience: string;
  /** verification refuses tokens that claim a longer lifetime */
  maxTokenLifetimeSeconds: number;
  /** refresh grace window; tests may shorten it */
  refreshGraceMs: number;
  /** the event types that change an access, and whose entries each one drops */
  accessEvents: Readonly<Record<string, AccessEventScope>>;
}

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
  /** the cached access; only in a process whose runtime has a loader (the one that issues tokens) */
  resolveAccess(userId: string, tenantId: string): Promise<Access | null>;
  /** reads an access without the cache, in `q` */
  loadAccess(q: Queryable, userId: string, tenantId: string): Promise<Access | null>;
}

const ACCESS_CACHE_MS = 5_000;
const EPOCH_WARNING_INTERVAL_MS = 60_000;
const EPOCH_RETRY_MS = 1_000;
const RING_RELOAD_MS = 60_000;
const KEY_MAX_AGE_S = 90 * 24 * 3600;
const SIGNING_KEYS_LOCK = 7_303_100;
const MAX_CACHED = 50_000;

interface Started {
  runtime: IdentityRuntime;
  /** installs the loader (and with it the cached access, its invalidations and the authenticator) once */
  install(loader: AccessLoader): void;
}

const runtimes = new WeakMap<Kernel, Promise<Started>>();
const started = new WeakMap<Kernel, IdentityRuntime>();

/** the runtime of a started identity service */
export const identityRuntime = (kernel: Kernel): IdentityRuntime => {
  const rt = started.get(kernel);
  if (!rt) throw commonErrors.serviceUnavailable('The identity service is starting.');
  return rt;
};

/**
 * Idempotent: the write and read plugins both call it from their start hooks. With a loader the
 * access cache and the authenticator are installed too (the first loader given wins).
 */
export const startIdentityRuntime = async (
  kernel: Kernel,
  options: IdentityRuntimeOptions,
  loader?: AccessLoader,
): Promise<IdentityRuntime> => {
  let pending = runtimes.get(kernel);
  if (!pending) {
    pending = build(kernel, options);
    runtimes.set(kernel, pending);
  }
  const made = await pending;
  if (loader) made.install(loader);
  return made.runtime;
};

const ringOptions = (kernel: Kernel, options: IdentityRuntimeOptions) => ({
  issuer: options.issuer,
  audience: options.audience,
  maxTokenLifetimeSeconds: options.maxTokenLifetimeSeconds,
  now: () => kernel.clock.now().getTime(),
});

const build = async (kernel: Kernel, options: IdentityRuntimeOptions): Promise<Started> => {
  const now = () => kernel.clock.now().getTime();
  const jwtBox = new SecretBox([{ id: 'k1', key: kernel.engines.secrets.key('identity.jwt.v1') }]);
  const box = new SecretBox([{ id: 'k1', key: kernel.engines.secrets.key('identity.secrets.v1') }]);
  const recovery = new RecoveryCodeHasher([
    { id: 'k1', key: kernel.engines.secrets.key('identity.recovery-codes.v1') },
  ]);
  const ringSettings = ringOptions(kernel, options);
  let ring = await loadRing(kernel, jwtBox, ringSettings);
  let loader: AccessLoader | null = null;
  const cache = new Map<string, { at: number; epoch: string; access: Access | null }>();
  const epochs = accessEpochs(kernel);
  let epochWarnedAt = Number.NEGATIVE_INFINITY;
  let epochsDownUntil = 0;
  /** the epochs of the pair, or null (do not cache) when the shared cache cannot be read */
  const epochOf = async (userId: string, tenantId: string): Promise<string | null> => {
    // after a failure the shared cache is left alone for a second: a Redis that hangs must not add its timeout to every request
    if (now() < epochsDownUntil) return null;
    try {
      return await epochs.current(epochScopes({ userId, tenantId }));
    } catch (error) {
      epochsDownUntil = now() + EPOCH_RETRY_MS;
      if (now() - epochWarnedAt > EPOCH_WARNING_INTERVAL_MS) {
        epochWarnedAt = now();
        kernel.logger.warn(
          { err: error },
          'access epochs unreadable (shared cache unreachable); access is read from PostgreSQL on every request meanwhile',
        );
      }
      return null;
    }
  };
  const loaderOrFail = (): AccessLoader => {
    if (!loader) throw commonErrors.serviceUnavailable('This process does not resolve access.');
    return loader;
  };
  const rt: IdentityRuntime = {
    get ring() {
      return ring;
    },
    jwtBox,
    box,
    recovery,
    // two hashes at once per core pair leaves libuv's other threads to file and DNS work
    passwordWork: new WorkLimiter({ concurrency: 2, perKey: 2, maxQueue: 64 }),
    issuer: options.issuer,
    audience: options.audience,
    graceMs: options.refreshGraceMs,
    accessCacheMs: ACCESS_CACHE_MS,
    invalidate(userId, tenantId) {
      for (const key of [...cache.keys()]) {
        const [u, t] = key.split('|');
        if ((userId === undefined || u === userId) && (tenantId === undefined || t === tenantId)) cache.delete(key);
      }
    },
    async resolveAccess(userId, tenantId) {
      const load = loaderOrFail();
      const key = `${userId}|${tenantId}`;
      const at = now();
      // read before the access itself: a change committed in between is loaded now and still
      // bumps the epoch after, so the worst case is one reload too many, never a stale hit
      const epoch = await epochOf(userId, tenantId);
      const hit = cache.get(key);
      if (hit && epoch !== null && hit.epoch === epoch && at - hit.at < rt.accessCacheMs) return hit.access;
      const access = await load(kernel.db, userId, tenantId);
      if (epoch === null) cache.delete(key);
      else cache.set(key, { at, epoch, access });
      if (cache.size > MAX_CACHED) {
        const oldest = cache.keys().next();
        if (!oldest.done) cache.delete(oldest.value);
      }
      return access;
    },
    loadAccess: (q, userId, tenantId) => loaderOrFail()(q, userId, tenantId),
  };
  const timer = setInterval(() => {
    loadRing(kernel, jwtBox, ringSettings).then(
      (r) => {
        ring = r;
      },
      (error: unknown) => kernel.logger.warn({ err: error }, 'reloading the signing keys failed'),
    );
  }, RING_RELOAD_MS);
  timer.unref();
  kernel.onClose('identity', async () => clearInterval(timer));
  started.set(kernel, rt);
  // a change of the registered permissions makes every cached access stale (the Owner role grants them all)
  onPermissionCatalogBump(kernel, () => rt.invalidate());
  return {
    runtime: rt,
    install(load) {
      if (loader) return;
      loader = load;
      kernel.invalidations.on(Object.keys(options.accessEvents), (event) => {
        const scope = accessScopeOf(event, options.accessEvents[event.type] ?? 'member');
        rt.invalidate(scope.userId, scope.tenantId);
      });
      kernel.authenticator = authenticator(rt, kernel);
    },
  };
};

const accessScopeOf = (event: PublishedEvent, scope: AccessEventScope): AccessScope => {
  const { userId, tenantId } = event.payload as { userId?: string; tenantId?: string };
  if (scope === 'user') return { userId };
  if (scope === 'tenant') return { tenantId };
  return { userId, tenantId };
};

/** a user's epoch covers them in every tenant; a tenant's covers every member; the catalog's (infra/permissions.ts) covers everyone */
const epochScopes = (scope: AccessScope): string[] => [
  ...(scope.userId ? [`u:${scope.userId}`] : []),
  ...(scope.tenantId ? [`t:${scope.tenantId}`] : []),
  PERMISSION_CATALOG_SCOPE,
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

interface SigningKeyRow {
  kid: string;
  created_at: string;
  activates_at: string;
  retired_at: string | null;
  public_jwk: PersistedSigningKey['publicJwk'];
  sealed_private_jwk: string;
}

/** Loads the ring; creates the first key when there is none and rotates a key older than 90 days (one process at a time). */
const loadRing = async (kernel: Kernel, jwtBox: SecretBox, options: ReturnType<typeof ringOptions>): Promise<KeyRing> =>
  inTransaction(kernel.db, async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [SIGNING_KEYS_LOCK]);
    const { rows } = await tx.query<SigningKeyRow>(
      'SELECT kid, created_at, activates_at, retired_at, public_jwk, sealed_private_jwk FROM identity.signing_keys ORDER BY activates_at',
    );
    const ring =
      rows.length === 0
        ? await Ring.generate(options)
        : await importKeyRing(
            rows.map((r) => ({
              kid: r.kid,
              createdAt: Number(r.created_at),
              activatesAt: Number(r.activates_at),
              retiredAt: r.retired_at === null ? null : Number(r.retired_at),
              publicJwk: r.public_jwk,
              sealedPrivateJwk: r.sealed_private_jwk,
            })),
            jwtBox,
            options,
          );
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
    await q.query(
      `INSERT INTO identity.signing_keys (kid, created_at, activates_at, retired_at, public_jwk, sealed_private_jwk) VALUES ($1, $2, $3, $4, $5, $6)
      ON CONFLICT (kid) DO UPDATE SET retired_at = EXCLUDED.retired_at`,
      [k.kid, k.createdAt, k.activatesAt, k.retiredAt, JSON.stringify(k.publicJwk), k.sealedPrivateJwk],
    );
  }
};

/** why a token was refused, at debug level: a bare 401 must be explainable from the logs (e.g. an issuer mismatch between roles) */
const logRefusal = (kernel: Kernel, reason: string, error?: unknown): void => {
  const cause = error instanceof Error ? (error.cause ?? error) : undefined;
  kernel.logger.debug(
    { reason, cause: cause instanceof Error ? `${cause.name}: ${cause.message}` : undefined },
    'access token refused',
  );
};

/**
 * A token's session was ended after it was issued: the account's (or membership's) sessions were
 * ended since (a password reset, a lock, a deletion), which raised the generation. A token without
 * the claim predates generations and counts as generation 0. It rides on the cached access (checked
 * against the access epochs on every request), so it costs no round trip of its own.
 */
export const sessionEnded = (tokenGeneration: number | undefined, access: Pick<Access, 'sessionGeneration'>): boolean =>
  (tokenGeneration ?? 0) < access.sessionGeneration;

const authenticator = (rt: IdentityRuntime, kernel: Kernel): Authenticator => ({
  async authenticate(token) {
    const claims = await rt.ring.verify(token).catch((error: unknown) => {
      logRefusal(
        kernel,
        `the token did not verify (expected issuer ${rt.issuer}, audience ${rt.audience}, ES256 with a known kid)`,
        error,
      );
      throw error;
    });
    const access = await rt.resolveAccess(claims.sub, claims.tenantId);
    if (!access) {
      logRefusal(kernel, 'the account or its membership of the tenant is not active');
      throw commonErrors.unauthorized();
    }
    if (sessionEnded(claims.sgen, access)) {
      logRefusal(kernel, 'the session ended after the token was issued (password reset, lock or deletion)');
      throw commonErrors.unauthorized('The session has ended; sign in again.');
    }
    const principal: Principal = {
      userId: claims.sub,
      tenantId: claims.tenantId,
      email: access.email,
      roles: access.roles,
      permissions: access.permissions,
      emailVerified: access.emailVerified,
      expiresAt: claims.exp * 1000,
      ...(claims.act ? { impersonatorId: claims.act.sub } : {}),
    };
    return principal;
  },
});
