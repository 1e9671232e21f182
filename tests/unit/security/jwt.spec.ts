import { createHmac, createPublicKey, randomBytes } from 'node:crypto';
import { generateKeyPair, importJWK, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  AccessTokenError,
  exportKeyRing,
  importKeyRing,
  KeyRing,
  type AccessTokenSubject,
  type KeyRingOptions,
  type PersistedSigningKey,
} from '../../../infra/security/jwt';
import { SecretBox } from '../../../infra/security/secret-box';

const ISSUER = 'https://id.platform.test';
const AUDIENCE = 'platform';
const MAX_LIFETIME = 3600;
const ACCESS_LIFETIME = 900;
const START = Date.UTC(2030, 0, 1, 12, 0, 0);

const subject: AccessTokenSubject = {
  sub: '0192b7a4-0000-7000-8000-000000000001',
  email: 'ann@example.com',
  tenantId: '0192b7a4-0000-7000-8000-0000000000aa',
  roles: ['Owner'],
};

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const nowSeconds = (ms: number) => Math.floor(ms / 1000);

/** A clock the tests move by hand, and a ring (persisted rows too) built on it. */
const setup = async (overrides: Partial<KeyRingOptions> = {}) => {
  const clock = { ms: START };
  const options: KeyRingOptions = {
    issuer: ISSUER,
    audience: AUDIENCE,
    maxTokenLifetimeSeconds: MAX_LIFETIME,
    now: () => clock.ms,
    ...overrides,
  };
  const ring = await KeyRing.generate(options);
  const box = new SecretBox([{ id: 'k1', key: randomBytes(32) }]);
  return { clock, options, ring, box };
};

/** The ring's genuine private key, as an insider with the database and the box key would have it. */
const genuinePrivateKey = async (ring: KeyRing, box: SecretBox): Promise<{ kid: string; key: CryptoKey }> => {
  const row = (await exportKeyRing(ring, box)).find((r) => r.kid === ring.currentKid)!;
  const jwk = JSON.parse(box.openString(row.sealedPrivateJwk, `jwt-signing-key:${row.kid}`));
  return { kid: row.kid, key: (await importJWK(jwk, 'ES256')) as CryptoKey };
};

const validPayload = (iat: number): JWTPayload => ({
  ...subject,
  iss: ISSUER,
  aud: AUDIENCE,
  iat,
  exp: iat + ACCESS_LIFETIME,
});

const rejection = async (promise: Promise<unknown>): Promise<AccessTokenError> => {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(AccessTokenError);
    return error as AccessTokenError;
  }
  throw new Error('the token was accepted');
};

describe('a token the ring signed and that is still valid', () => {
  it('verifies, returning exactly the claims issued', async () => {
    const { ring } = await setup();
    const token = await ring.sign(subject, { expiresInSeconds: ACCESS_LIFETIME });
    const iat = nowSeconds(START);
    expect(await ring.verify(token)).toEqual({
      ...subject,
      iss: ISSUER,
      aud: AUDIENCE,
      iat,
      exp: iat + ACCESS_LIFETIME,
    });
  });

  it('carries the header {alg: ES256, kid, typ: JWT} and nothing else', async () => {
    const { ring } = await setup();
    const token = await ring.sign(subject, { expiresInSeconds: ACCESS_LIFETIME });
    const header = JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString());
    expect(header).toEqual({ alg: 'ES256', kid: ring.currentKid, typ: 'JWT' });
  });

  it('keeps the act claim of an impersonation token', async () => {
    const { ring } = await setup();
    const token = await ring.sign({ ...subject, act: { sub: 'platform-owner-1' } }, { expiresInSeconds: MAX_LIFETIME });
    expect((await ring.verify(token)).act).toEqual({ sub: 'platform-owner-1' });
  });

  it('keeps the session generation (sgen) it was issued under', async () => {
    const { ring } = await setup();
    const token = await ring.sign({ ...subject, sgen: 3 }, { expiresInSeconds: ACCESS_LIFETIME });
    expect((await ring.verify(token)).sgen).toBe(3);
  });

  it('verifies up to 5 s after exp (clock tolerance)', async () => {
    const { ring, clock } = await setup();
    const token = await ring.sign(subject, { expiresInSeconds: ACCESS_LIFETIME });
    clock.ms += (ACCESS_LIFETIME + 4) * 1000;
    await expect(ring.verify(token)).resolves.toMatchObject({ sub: subject.sub });
  });
});

describe('a token verified once and presented again (verified-token cache)', () => {
  it('is answered again while valid, and refused as expired once past exp + tolerance', async () => {
    const { ring, clock } = await setup();
    const token = await ring.sign(subject, { expiresInSeconds: ACCESS_LIFETIME });
    await ring.verify(token);
    clock.ms += (ACCESS_LIFETIME + 4) * 1000;
    await expect(ring.verify(token)).resolves.toMatchObject({ sub: subject.sub });
    clock.ms += 2000;
    expect((await rejection(ring.verify(token))).reason).toBe('expired');
  });

  it('hands each caller its own copy of the claims', async () => {
    const { ring } = await setup();
    const token = await ring.sign(subject, { expiresInSeconds: ACCESS_LIFETIME });
    for (let call = 0; call < 2; call++) {
      const claims = await ring.verify(token); // the first call verifies, the second is answered from the cache
      claims.roles.push('platform.admin');
      claims.tenantId = 'another-tenant';
    }
    expect(await ring.verify(token)).toMatchObject({ roles: ['Owner'], tenantId: subject.tenantId });
  });

  it('does not lend its verdict to a tampered copy of the token', async () => {
    const { ring } = await setup();
    const token = await ring.sign(subject, { expiresInSeconds: ACCESS_LIFETIME });
    await ring.verify(token);
    const [header, payload, signature] = token.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    expect(
      (await rejection(ring.verify(`${header}.${b64({ ...claims, roles: ['platform.admin'] })}.${signature}`))).reason,
    ).toBe('invalid');
  });

  it('holds at most the configured number of tokens', async () => {
    const { ring } = await setup({ verifiedTokenCacheSize: 2 });
    for (const sub of ['a', 'b', 'c'])
      await ring.verify(await ring.sign({ ...subject, sub }, { expiresInSeconds: ACCESS_LIFETIME }));
    expect(ring.cachedTokenCount).toBe(2);
  });

  it('works the same with the cache turned off', async () => {
    const { ring, clock } = await setup({ verifiedTokenCacheSize: 0 });
    const token = await ring.sign(subject, { expiresInSeconds: ACCESS_LIFETIME });
    await expect(ring.verify(token)).resolves.toMatchObject({ sub: subject.sub });
    await expect(ring.verify(token)).resolves.toMatchObject({ sub: subject.sub });
    clock.ms += (ACCESS_LIFETIME + 6) * 1000;
    expect((await rejection(ring.verify(token))).reason).toBe('expired');
  });
});

describe('signing', () => {
  it('refuses a lifetime above the maximum, which would outlive a retired key', async () => {
    const { ring } = await setup();
    await expect(ring.sign(subject, { expiresInSeconds: MAX_LIFETIME + 1 })).rejects.toThrow(RangeError);
    await expect(ring.sign(subject, { expiresInSeconds: 0 })).rejects.toThrow(RangeError);
  });
});

describe('an expired token', () => {
  it('is refused as expired, mapped to 401 token-expired', async () => {
    const { ring, clock } = await setup();
    const token = await ring.sign(subject, { expiresInSeconds: ACCESS_LIFETIME });
    clock.ms += (ACCESS_LIFETIME + 6) * 1000;
    const error = await rejection(ring.verify(token));
    expect(error.reason).toBe('expired');
    expect([error.status, error.suffix]).toEqual([401, 'token-expired']);
  });

  it('is refused as invalid, not expired, when its signature is forged', async () => {
    const { ring, clock } = await setup();
    const { privateKey } = await generateKeyPair('ES256');
    const iat = nowSeconds(START);
    const forged = await new SignJWT(validPayload(iat))
      .setProtectedHeader({ alg: 'ES256', kid: ring.currentKid, typ: 'JWT' })
      .sign(privateKey);
    clock.ms += (ACCESS_LIFETIME + 60) * 1000;
    expect((await rejection(ring.verify(forged))).reason).toBe('invalid');
  });
});

describe('the forged-token corpus', () => {
  let ring: KeyRing;
  let box: SecretBox;
  let options: KeyRingOptions;
  let kid: string;
  let iat: number;

  beforeEach(async () => {
    ({ ring, box, options } = await setup());
    kid = ring.currentKid;
    iat = nowSeconds(START);
  });

  const expectInvalid = async (token: string) => {
    const error = await rejection(ring.verify(token));
    expect(error.reason).toBe('invalid');
    expect([error.status, error.suffix]).toEqual([401, 'unauthorized']);
  };

  it('refuses alg "none" (unsigned), with or without a signature part', async () => {
    const body = `${b64({ alg: 'none', kid, typ: 'JWT' })}.${b64(validPayload(iat))}`;
    await expectInvalid(`${body}.`);
    await expectInvalid(`${body}.${randomBytes(64).toString('base64url')}`);
  });

  it('refuses HS256 signed with the public key as the HMAC secret (key confusion), in JWK and PEM form', async () => {
    const publicJwk = ring.jwks().keys[0]!;
    const pem = createPublicKey({ key: publicJwk as never, format: 'jwk' }).export({ type: 'spki', format: 'pem' });
    for (const secret of [JSON.stringify(publicJwk), pem, Buffer.from(publicJwk.x!, 'base64url')]) {
      const body = `${b64({ alg: 'HS256', kid, typ: 'JWT' })}.${b64(validPayload(iat))}`;
      const signature = createHmac('sha256', secret).update(body).digest('base64url');
      await expectInvalid(`${body}.${signature}`);
    }
  });

  it('refuses RS256 signed with a fresh RSA key under a known kid', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    await expectInvalid(
      await new SignJWT(validPayload(iat)).setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' }).sign(privateKey),
    );
  });

  it('refuses an ES256 signature from another P-256 key under a known kid', async () => {
    const { privateKey } = await generateKeyPair('ES256');
    await expectInvalid(
      await new SignJWT(validPayload(iat)).setProtectedHeader({ alg: 'ES256', kid, typ: 'JWT' }).sign(privateKey),
    );
  });

  it('refuses ES384 and ES512 even though they are ECDSA too', async () => {
    const { privateKey } = await generateKeyPair('ES384');
    await expectInvalid(
      await new SignJWT(validPayload(iat)).setProtectedHeader({ alg: 'ES384', kid, typ: 'JWT' }).sign(privateKey),
    );
  });

  it('refuses a token with an unknown kid (signed by another ring)', async () => {
    const other = await KeyRing.generate(options);
    await expectInvalid(await other.sign(subject, { expiresInSeconds: ACCESS_LIFETIME }));
  });

  it('refuses a genuine signature whose header lacks the kid', async () => {
    const genuine = await genuinePrivateKey(ring, box);
    await expectInvalid(
      await new SignJWT(validPayload(iat)).setProtectedHeader({ alg: 'ES256', typ: 'JWT' }).sign(genuine.key),
    );
  });

  it('refuses a tampered payload with the original signature kept', async () => {
    const [header, payload, signature] = (await ring.sign(subject, { expiresInSeconds: ACCESS_LIFETIME })).split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    for (const tampered of [
      { ...claims, roles: ['Owner', 'platform.admin'] },
      { ...claims, tenantId: 'another-tenant' },
      { ...claims, exp: claims.exp + 86400 },
    ]) {
      await expectInvalid(`${header}.${b64(tampered)}.${signature}`);
    }
  });

  it('refuses a tampered header with the original signature kept', async () => {
    const [, payload, signature] = (await ring.sign(subject, { expiresInSeconds: ACCESS_LIFETIME })).split('.');
    await expectInvalid(`${b64({ alg: 'ES256', kid, typ: 'JWT', extra: 1 })}.${payload}.${signature}`);
  });

  it('refuses a token for another audience', async () => {
    const rows = await exportKeyRing(ring, box);
    const elsewhere = await importKeyRing(rows, box, { ...options, audience: 'another-client' });
    await expectInvalid(await elsewhere.sign(subject, { expiresInSeconds: ACCESS_LIFETIME }));
  });

  it('refuses a token from another issuer', async () => {
    const rows = await exportKeyRing(ring, box);
    const elsewhere = await importKeyRing(rows, box, { ...options, issuer: 'https://evil.test' });
    await expectInvalid(await elsewhere.sign(subject, { expiresInSeconds: ACCESS_LIFETIME }));
  });

  it('refuses a genuine signature over a header with another typ', async () => {
    const genuine = await genuinePrivateKey(ring, box);
    await expectInvalid(
      await new SignJWT(validPayload(iat)).setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' }).sign(genuine.key),
    );
  });

  it('refuses a genuine signature over claims missing tenantId', async () => {
    const genuine = await genuinePrivateKey(ring, box);
    const { tenantId: _omitted, ...claims } = validPayload(iat);
    await expectInvalid(
      await new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid, typ: 'JWT' }).sign(genuine.key),
    );
  });

  it('refuses a genuine signature over a token living longer than the maximum', async () => {
    const genuine = await genuinePrivateKey(ring, box);
    const claims = { ...validPayload(iat), exp: iat + MAX_LIFETIME + 60 };
    await expectInvalid(
      await new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid, typ: 'JWT' }).sign(genuine.key),
    );
  });

  it('refuses a genuine signature over a token issued in the future', async () => {
    const genuine = await genuinePrivateKey(ring, box);
    await expectInvalid(
      await new SignJWT(validPayload(iat + 60)).setProtectedHeader({ alg: 'ES256', kid, typ: 'JWT' }).sign(genuine.key),
    );
  });

  it('refuses structural garbage and oversized input', async () => {
    for (const junk of ['', 'a.b', 'a.b.c', '...', `${'a'.repeat(9000)}.b.c`]) await expectInvalid(junk);
  });
});

describe('a ring after rotation', () => {
  it('signs new tokens with the new kid and still verifies tokens of the old key', async () => {
    const { ring, clock } = await setup();
    const oldKid = ring.currentKid;
    const oldToken = await ring.sign(subject, { expiresInSeconds: ACCESS_LIFETIME });
    clock.ms += 60_000;
    const newKid = await ring.rotate();
    const newToken = await ring.sign(subject, { expiresInSeconds: ACCESS_LIFETIME });
    expect(newKid).not.toBe(oldKid);
    expect(JSON.parse(Buffer.from(newToken.split('.')[0]!, 'base64url').toString()).kid).toBe(newKid);
    await expect(ring.verify(oldToken)).resolves.toMatchObject({ sub: subject.sub });
    await expect(ring.verify(newToken)).resolves.toMatchObject({ sub: subject.sub });
    expect(ring.jwks().keys.map((k) => k.kid)).toEqual([oldKid, newKid]);
  });

  it('drops the old key once retiredAt + maximum lifetime + tolerance has passed', async () => {
    const { ring, clock } = await setup();
    const oldKid = ring.currentKid;
    const newKid = await ring.rotate();
    clock.ms += (MAX_LIFETIME + 5) * 1000;
    expect(ring.prune()).toEqual([]);
    clock.ms += 1000;
    expect(ring.jwks().keys.map((k) => k.kid)).toEqual([newKid]);
    expect(ring.prune()).toEqual([oldKid]);
  });

  it('refuses a token of the old key once its window has passed, even before prune', async () => {
    const { ring, clock, box } = await setup();
    const genuine = await genuinePrivateKey(ring, box);
    await ring.rotate();
    clock.ms += (MAX_LIFETIME + 6) * 1000;
    const iat = nowSeconds(clock.ms);
    const late = await new SignJWT(validPayload(iat))
      .setProtectedHeader({ alg: 'ES256', kid: genuine.kid, typ: 'JWT' })
      .sign(genuine.key);
    expect((await rejection(ring.verify(late))).reason).toBe('invalid');
  });
});

describe('a rotation with a delayed activation (several instances)', () => {
  it('publishes the new key at once but signs with it only after the delay', async () => {
    const { ring, clock } = await setup();
    const oldKid = ring.currentKid;
    const newKid = await ring.rotate({ activateAfterSeconds: 120 });
    expect(ring.jwks().keys.map((k) => k.kid)).toContain(newKid);
    expect(ring.currentKid).toBe(oldKid);
    clock.ms += 120_000;
    expect(ring.currentKid).toBe(newKid);
  });
});

describe('a ring persisted and loaded again', () => {
  it('verifies the tokens signed before and signs with the same current kid', async () => {
    const { ring, box, options, clock } = await setup();
    await ring.rotate();
    const token = await ring.sign(subject, { expiresInSeconds: ACCESS_LIFETIME });
    const rows = JSON.parse(JSON.stringify(await exportKeyRing(ring, box))) as PersistedSigningKey[];
    const loaded = await importKeyRing(rows, box, options);
    await expect(loaded.verify(token)).resolves.toMatchObject({ sub: subject.sub });
    expect(loaded.currentKid).toBe(ring.currentKid);
    expect(loaded.jwks()).toEqual(ring.jwks());
    clock.ms += 1000;
    await expect(ring.verify(await loaded.sign(subject, { expiresInSeconds: 60 }))).resolves.toMatchObject({
      sub: subject.sub,
    });
  });

  it('stores private keys only sealed', async () => {
    const { ring, box } = await setup();
    const [row] = await exportKeyRing(ring, box);
    const privateJwk = JSON.parse(box.openString(row!.sealedPrivateJwk, `jwt-signing-key:${row!.kid}`));
    expect(privateJwk.d).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(JSON.stringify(row)).not.toContain(privateJwk.d);
    expect(row!.sealedPrivateJwk).toMatch(/^v1\.k1\./);
    expect(row!.publicJwk).not.toHaveProperty('d');
  });

  it('refuses rows whose kid does not match their key', async () => {
    const { ring, box, options } = await setup();
    await ring.rotate();
    const [a, b] = await exportKeyRing(ring, box);
    // The seal context binds the kid, so even a re-sealed swap must fail on the thumbprint check.
    const swapped = {
      ...a!,
      sealedPrivateJwk: box.seal(
        box.openString(b!.sealedPrivateJwk, `jwt-signing-key:${b!.kid}`),
        `jwt-signing-key:${a!.kid}`,
      ),
    };
    await expect(importKeyRing([swapped], box, options)).rejects.toThrow(/does not match/);
    await expect(importKeyRing([{ ...a!, sealedPrivateJwk: b!.sealedPrivateJwk }], box, options)).rejects.toThrow(
      /failed authentication/,
    );
  });

  it('cannot be loaded without the secret-box key', async () => {
    const { ring, box, options } = await setup();
    const rows = await exportKeyRing(ring, box);
    await expect(importKeyRing(rows, new SecretBox([{ id: 'k1', key: randomBytes(32) }]), options)).rejects.toThrow();
  });
});
