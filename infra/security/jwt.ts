/**
 * Access tokens: JWTs signed with ES256 (ECDSA P-256), the only algorithm the specification allows.
 *
 * A KeyRing holds the signing keys, each named by its kid (the RFC 7638 thumbprint of its public
 * key). The newest active key signs. After rotate(), the previous key stops signing (its retiredAt
 * is the new key's activation) but still verifies until no token it signed can be alive, that is
 * until retiredAt + the maximum token lifetime + the clock tolerance; then prune() drops it.
 *
 * Verification pins the algorithm list to ES256 before any key is looked up, so "alg":"none",
 * HMAC-with-the-public-key and RSA tokens are refused whatever their kid; it accepts only a kid in
 * the ring and inside its verification window, and checks typ, iss, aud, exp and iat with a small
 * clock tolerance. Public keys are imported once, when a key enters the ring, never per request,
 * and a bounded cache remembers tokens already verified (only those: a forgery never enters it),
 * so a client's repeated requests with one token cost one signature check.
 *
 * Persistence: exportKeyRing / importKeyRing turn the ring into rows whose private keys are sealed
 * with the secret box (context bound to the kid), for PostgreSQL.
 *
 * Several instances: a key must be known to every verifier before it signs. rotate() therefore
 * takes activateAfterSeconds: the new key is published (JWKS, verification) at once and signs only
 * after the delay, which should exceed the interval at which instances reload the ring.
 */
import {
  calculateJwkThumbprint,
  errors as joseErrors,
  exportJWK,
  generateKeyPair,
  importJWK,
  jwtVerify,
  SignJWT,
  type CryptoKey,
  type JWK,
  type JWTPayload,
} from 'jose';
import { z } from 'zod';
import { DomainError } from '../../domain/shared/errors';
import type { SecretBox } from './secret-box';

const ALGORITHM = 'ES256';
const TOKEN_TYPE = 'JWT';
/** Far above any token we issue; refusing larger input before parsing bounds the work an attacker can cause. */
const MAX_TOKEN_LENGTH = 8192;

export interface AccessTokenSubject {
  sub: string;
  email: string;
  tenantId: string;
  roles: string[];
  /** set on impersonation tokens: the platform owner acting as sub (RFC 8693 "act") */
  act?: { sub: string };
  /**
   * the session generation the token was issued under: the issuer refuses it once the account's
   * sessions were ended after it (a number, not a time: iat has whole seconds, and a token issued
   * in the second of a password reset must still be told apart); absent on tokens issued before it existed
   */
  sgen?: number;
}

export interface AccessTokenClaims extends AccessTokenSubject {
  iat: number;
  exp: number;
  iss: string;
  aud: string;
}

const ClaimsSchema = z.object({
  sub: z.string().min(1),
  email: z.string().min(1),
  tenantId: z.string().min(1),
  roles: z.array(z.string()),
  act: z.object({ sub: z.string().min(1) }).optional(),
  sgen: z.number().int().nonnegative().optional(),
  iat: z.number().int(),
  exp: z.number().int(),
  iss: z.string(),
  aud: z.string(),
});

export type TokenRejection = 'expired' | 'invalid';

/**
 * A refused access token. An expired token maps to 401 token-expired (the client should refresh);
 * anything else to 401 unauthorized, with one fixed detail so the response never tells an attacker
 * which check a forgery failed. The precise reason is kept in `cause` for logs.
 * "expired" is reported only for tokens whose signature verified.
 */
export class AccessTokenError extends DomainError {
  readonly reason: TokenRejection;

  constructor(reason: TokenRejection, cause?: unknown) {
    super(
      reason === 'expired'
        ? { status: 401, suffix: 'token-expired', title: 'Token expired', detail: 'The access token has expired.' }
        : { status: 401, suffix: 'unauthorized', title: 'Unauthorized', detail: 'A valid access token is required.' },
    );
    this.name = 'AccessTokenError';
    this.reason = reason;
    if (cause !== undefined) this.cause = cause;
  }
}

export interface KeyRingOptions {
  issuer: string;
  audience: string;
  /** the longest lifetime sign() accepts; it also bounds how long a retired key keeps verifying (impersonation tokens: 1 hour) */
  maxTokenLifetimeSeconds: number;
  /** allowed clock skew between issuer and verifier, applied to exp and iat */
  clockToleranceSeconds?: number;
  /** injected clock, milliseconds since the epoch */
  now?: () => number;
  /**
   * How many verified tokens to remember (least recently used evicted first); 0 turns the cache
   * off. A client sends the same access token with every request for up to 15 minutes, and an
   * ES256 verification costs about 0.25 ms here, so the gateway verifies each token once and
   * answers repeats from memory. Default 10,000 entries (about 10 MB at most).
   */
  verifiedTokenCacheSize?: number;
}

interface RingKey {
  kid: string;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  publicJwk: JWK;
  createdAt: number;
  activatesAt: number;
  retiredAt: number | null;
}

/** One row of the persisted ring; times are Unix seconds. */
export interface PersistedSigningKey {
  kid: string;
  createdAt: number;
  activatesAt: number;
  retiredAt: number | null;
  publicJwk: JWK;
  /** the private JWK as JSON, sealed by the secret box with context "jwt-signing-key:<kid>" */
  sealedPrivateJwk: string;
}

/** Callers get their own copy, so nobody can alter what the cache hands to the next request. */
const copyClaims = (claims: AccessTokenClaims): AccessTokenClaims => ({
  ...claims,
  roles: [...claims.roles],
  ...(claims.act ? { act: { ...claims.act } } : {}),
});

const sealContext = (kid: string): string => `jwt-signing-key:${kid}`;

const publicJwkOf = async (publicKey: CryptoKey): Promise<{ kid: string; jwk: JWK }> => {
  const { kty, crv, x, y } = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint({ kty, crv, x, y });
  return { kid, jwk: { kty, crv, x, y, kid, alg: ALGORITHM, use: 'sig' } };
};

export class KeyRing {
  private keys: RingKey[];
  private readonly byKid = new Map<string, RingKey>();
  private readonly issuer: string;
  private readonly audience: string;
  private readonly maxLifetime: number;
  private readonly tolerance: number;
  private readonly nowMs: () => number;
  private readonly cacheSize: number;
  /** token text → its claims and kid; Map keeps insertion order, which serves as the LRU order */
  private readonly verified = new Map<string, { claims: AccessTokenClaims; kid: string }>();

  private constructor(options: KeyRingOptions, keys: RingKey[]) {
    if (!Number.isInteger(options.maxTokenLifetimeSeconds) || options.maxTokenLifetimeSeconds <= 0) {
      throw new RangeError('maxTokenLifetimeSeconds must be a positive integer');
    }
    this.issuer = options.issuer;
    this.audience = options.audience;
    this.maxLifetime = options.maxTokenLifetimeSeconds;
    this.tolerance = options.clockToleranceSeconds ?? 5;
    this.nowMs = options.now ?? Date.now;
    this.cacheSize = options.verifiedTokenCacheSize ?? 10_000;
    this.keys = [...keys].sort((a, b) => a.activatesAt - b.activatesAt);
    for (const key of this.keys) this.byKid.set(key.kid, key);
  }

  /** A ring with one fresh key that signs at once. */
  static async generate(options: KeyRingOptions): Promise<KeyRing> {
    const ring = new KeyRing(options, []);
    await ring.rotate();
    return ring;
  }

  /** @internal used by importKeyRing */
  static fromKeys(options: KeyRingOptions, keys: RingKey[]): KeyRing {
    return new KeyRing(options, keys);
  }

  private nowSeconds(): number {
    return Math.floor(this.nowMs() / 1000);
  }

  /**
   * Adds a new key; it signs from now + activateAfterSeconds on, and the key that signed until
   * then is retired at that moment. Returns the new kid.
   */
  async rotate({ activateAfterSeconds = 0 }: { activateAfterSeconds?: number } = {}): Promise<string> {
    if (!Number.isInteger(activateAfterSeconds) || activateAfterSeconds < 0)
      throw new RangeError('activateAfterSeconds must be a non-negative integer');
    const { privateKey, publicKey } = await generateKeyPair(ALGORITHM, { extractable: true });
    const { kid, jwk } = await publicJwkOf(publicKey);
    const now = this.nowSeconds();
    const activatesAt = now + activateAfterSeconds;
    const previous = this.keys.at(-1);
    if (previous && previous.retiredAt === null) previous.retiredAt = activatesAt;
    const key: RingKey = { kid, privateKey, publicKey, publicJwk: jwk, createdAt: now, activatesAt, retiredAt: null };
    this.keys.push(key);
    this.byKid.set(kid, key);
    return kid;
  }

  /** Drops keys that can no longer have a live token; returns their kids so their rows can be deleted. */
  prune(): string[] {
    const now = this.nowSeconds();
    const dropped = this.keys.filter((key) => !this.verifies(key, now));
    this.keys = this.keys.filter((key) => this.verifies(key, now));
    for (const key of dropped) this.byKid.delete(key.kid);
    return dropped.map((key) => key.kid);
  }

  private verifies(key: RingKey, now: number): boolean {
    return key.retiredAt === null || now <= key.retiredAt + this.maxLifetime + this.tolerance;
  }

  private signingKey(now: number): RingKey {
    const active = this.keys
      .filter((key) => key.activatesAt <= now && (key.retiredAt === null || now < key.retiredAt))
      .at(-1);
    if (!active) throw new Error('the key ring has no active signing key');
    return active;
  }

  /** The kid that sign() uses now. */
  get currentKid(): string {
    return this.signingKey(this.nowSeconds()).kid;
  }

  async sign(subject: AccessTokenSubject, { expiresInSeconds }: { expiresInSeconds: number }): Promise<string> {
    if (!Number.isInteger(expiresInSeconds) || expiresInSeconds <= 0 || expiresInSeconds > this.maxLifetime) {
      // A longer token would outlive its key's verification window after a rotation.
      throw new RangeError(`token lifetime must be 1..${this.maxLifetime} s`);
    }
    const now = this.nowSeconds();
    const key = this.signingKey(now);
    const payload: JWTPayload = { email: subject.email, tenantId: subject.tenantId, roles: [...subject.roles] };
    if (subject.act) payload.act = { sub: subject.act.sub };
    if (subject.sgen !== undefined) payload.sgen = subject.sgen;
    return new SignJWT(payload)
      .setProtectedHeader({ alg: ALGORITHM, kid: key.kid, typ: TOKEN_TYPE })
      .setSubject(subject.sub)
      .setIssuer(this.issuer)
      .setAudience(this.audience)
      .setIssuedAt(now)
      .setExpirationTime(now + expiresInSeconds)
      .sign(key.privateKey);
  }

  /** The claims of a valid token; otherwise throws AccessTokenError ('expired' or 'invalid'). */
  async verify(token: string): Promise<AccessTokenClaims> {
    if (typeof token !== 'string' || token.length > MAX_TOKEN_LENGTH) throw new AccessTokenError('invalid');
    const nowMs = this.nowMs();
    const now = Math.floor(nowMs / 1000);
    const cached = this.fromCache(token, now);
    if (cached) return cached;
    let payload: JWTPayload;
    let kid = '';
    try {
      ({ payload } = await jwtVerify(
        token,
        (header) => {
          const key = typeof header.kid === 'string' ? this.byKid.get(header.kid) : undefined;
          if (!key || !this.verifies(key, now)) throw new joseErrors.JWKSNoMatchingKey('unknown or retired kid');
          kid = key.kid;
          return key.publicKey;
        },
        {
          algorithms: [ALGORITHM],
          typ: TOKEN_TYPE,
          issuer: this.issuer,
          audience: this.audience,
          clockTolerance: this.tolerance,
          currentDate: new Date(nowMs),
          maxTokenAge: this.maxLifetime,
          requiredClaims: ['exp', 'sub'],
        },
      ));
    } catch (error) {
      // jose validates claims only after the signature, so JWTExpired always concerns an authentic token.
      throw new AccessTokenError(error instanceof joseErrors.JWTExpired ? 'expired' : 'invalid', error);
    }
    const parsed = ClaimsSchema.safeParse(payload);
    if (!parsed.success) throw new AccessTokenError('invalid', parsed.error);
    const claims = parsed.data;
    // We never issue a token living longer than the maximum; one that does was not made by sign().
    if (claims.exp - claims.iat > this.maxLifetime)
      throw new AccessTokenError('invalid', new Error('lifetime above the maximum'));
    this.remember(token, claims, kid);
    return copyClaims(claims);
  }

  /**
   * A token verified before is answered from memory, but time-dependent rules are applied again:
   * expiry (with the same tolerance) and the signing key's verification window.
   */
  private fromCache(token: string, now: number): AccessTokenClaims | undefined {
    const entry = this.verified.get(token);
    if (!entry) return undefined;
    this.verified.delete(token);
    if (now >= entry.claims.exp + this.tolerance)
      throw new AccessTokenError('expired', new Error('"exp" claim timestamp check failed (cached)'));
    const key = this.byKid.get(entry.kid);
    if (!key || !this.verifies(key, now)) return undefined; // full verification will refuse it
    this.verified.set(token, entry); // most recently used goes last
    return copyClaims(entry.claims);
  }

  /** How many verified tokens the cache holds (for metrics). */
  get cachedTokenCount(): number {
    return this.verified.size;
  }

  private remember(token: string, claims: AccessTokenClaims, kid: string): void {
    if (this.cacheSize <= 0) return;
    this.verified.delete(token);
    this.verified.set(token, { claims, kid });
    if (this.verified.size > this.cacheSize) this.verified.delete(this.verified.keys().next().value!);
  }

  /** The public keys that verify now (including keys published ahead of activation), for /.well-known/jwks.json. */
  jwks(): { keys: JWK[] } {
    const now = this.nowSeconds();
    return { keys: this.keys.filter((key) => this.verifies(key, now)).map((key) => ({ ...key.publicJwk })) };
  }

  /** @internal used by exportKeyRing */
  entries(): readonly RingKey[] {
    return this.keys;
  }
}

export const exportKeyRing = async (ring: KeyRing, box: SecretBox): Promise<PersistedSigningKey[]> =>
  Promise.all(
    ring.entries().map(async (key) => ({
      kid: key.kid,
      createdAt: key.createdAt,
      activatesAt: key.activatesAt,
      retiredAt: key.retiredAt,
      publicJwk: { ...key.publicJwk },
      sealedPrivateJwk: box.seal(JSON.stringify(await exportJWK(key.privateKey)), sealContext(key.kid)),
    })),
  );

const PrivateJwkSchema = z.object({
  kty: z.literal('EC'),
  crv: z.literal('P-256'),
  x: z.string(),
  y: z.string(),
  d: z.string(),
});

/**
 * Rebuilds a ring from stored rows. Each private key is opened with the secret box and checked
 * against its row: the kid must be the thumbprint of the key's own public part, so a row whose
 * kid and key were swapped or altered is refused rather than trusted.
 */
export const importKeyRing = async (
  rows: readonly PersistedSigningKey[],
  box: SecretBox,
  options: KeyRingOptions,
): Promise<KeyRing> => {
  const keys = await Promise.all(
    rows.map(async (row): Promise<RingKey> => {
      const privateJwk = PrivateJwkSchema.parse(JSON.parse(box.openString(row.sealedPrivateJwk, sealContext(row.kid))));
      const privateKey = await importJWK(privateJwk, ALGORITHM, { extractable: true });
      const { d: _d, ...publicPart } = privateJwk;
      const publicKey = await importJWK(publicPart, ALGORITHM);
      if (privateKey instanceof Uint8Array || publicKey instanceof Uint8Array)
        throw new Error('expected EC keys from importJWK');
      const { kid, jwk } = await publicJwkOf(publicKey);
      if (kid !== row.kid) throw new Error(`stored signing key ${row.kid} does not match its key material`);
      return {
        kid,
        privateKey,
        publicKey,
        publicJwk: jwk,
        createdAt: row.createdAt,
        activatesAt: row.activatesAt,
        retiredAt: row.retiredAt,
      };
    }),
  );
  return KeyRing.fromKeys(options, keys);
};
