import { createHmac, generateKeyPairSync, sign as nodeSign } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IdentityPlatform, Registered } from '../../support/identity';
import { registerUser, startIdentityPlatform, uniqueEmail } from '../../support/identity';

let p: IdentityPlatform;
let user: Registered;
beforeAll(async () => {
  p = await startIdentityPlatform();
  user = await registerUser(p);
});
afterAll(async () => {
  await p?.close();
});

const b64 = (x: unknown) => Buffer.from(typeof x === 'string' ? x : JSON.stringify(x)).toString('base64url');

describe('a corpus of forged access tokens', () => {
  it('is refused with 401 on every one', async () => {
    const [h, pl, sig] = user.accessToken.split('.') as [string, string, string];
    const header = JSON.parse(Buffer.from(h, 'base64url').toString());
    const claims = JSON.parse(Buffer.from(pl, 'base64url').toString());
    const jwks = (await p.api('/.well-known/jwks.json')).body;
    const publicJwk = JSON.stringify(jwks.keys[0]);
    const hs = (payload: unknown, secret: string) => {
      const head = b64({ alg: 'HS256', typ: 'JWT', kid: header.kid });
      const body = b64(payload);
      return `${head}.${body}.${createHmac('sha256', secret).update(`${head}.${body}`).digest('base64url')}`;
    };
    const { privateKey: rsa } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const rsHead = b64({ alg: 'RS256', typ: 'JWT', kid: header.kid });
    const rs256 = `${rsHead}.${pl}.${nodeSign('sha256', Buffer.from(`${rsHead}.${pl}`), rsa).toString('base64url')}`;
    const { privateKey: ec } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const esSigned = (headerOverride: object, payload: object) => {
      const head = b64({ ...header, ...headerOverride });
      const body = b64(payload);
      return `${head}.${body}.${nodeSign('sha256', Buffer.from(`${head}.${body}`), { key: ec, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
    };
    const corpus: Record<string, string> = {
      'alg none': `${b64({ alg: 'none', typ: 'JWT' })}.${pl}.`,
      'alg none with kid': `${b64({ alg: 'none', typ: 'JWT', kid: header.kid })}.${pl}.`,
      'HS256 signed with the public key': hs(claims, publicJwk),
      'HS256 signed with the x coordinate': hs(claims, jwks.keys[0].x),
      RS256: rs256,
      'foreign ES256 key with our kid': esSigned({}, claims),
      'unknown kid': esSigned({ kid: 'not-a-key' }, claims),
      expired: esSigned({}, { ...claims, iat: claims.iat - 7200, exp: claims.iat - 3600 }),
      'wrong aud (foreign key)': esSigned({}, { ...claims, aud: 'someone-else' }),
      'tampered payload': `${h}.${b64({ ...claims, tenantId: 'another-tenant' })}.${sig}`,
      'tampered roles': `${h}.${b64({ ...claims, roles: ['Owner', 'admin'] })}.${sig}`,
      'signature stripped': `${h}.${pl}.`,
      garbage: 'a.b.c',
      'two parts': `${h}.${pl}`,
    };
    for (const [name, token] of Object.entries(corpus)) {
      const res = await p.api('/auth/me', { token });
      expect([name, res.status]).toEqual([name, 401]);
      expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
    }
    expect((await p.api('/auth/me', { token: user.accessToken })).status).toBe(200);
  });

  it('refuses a genuine token re-signed for another issuer or audience by our own ring', async () => {
    const { KeyRing } = await import('../../../infra/security/jwt');
    const other = await KeyRing.generate({
      issuer: 'https://evil.example',
      audience: 'platform',
      maxTokenLifetimeSeconds: 3600,
    });
    const token = await other.sign(
      { sub: user.userId, email: user.email, tenantId: user.tenantId, roles: ['Owner'] },
      { expiresInSeconds: 600 },
    );
    expect((await p.api('/auth/me', { token })).status).toBe(401);
  });
});

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
/** medians within 5 ms, or within a quarter of the faster one when a loaded machine (or the split topology's hop) slows both */
const expectSameTime = (known: number[], unknown: number[]) => {
  const [a, b] = [median(known), median(unknown)];
  expect(Math.abs(a - b)).toBeLessThan(Math.max(5, 0.25 * Math.min(a, b)));
};
const timed = async (fn: () => Promise<{ status: number; body: unknown }>) => {
  const start = process.hrtime.bigint();
  const res = await fn();
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, res };
};

describe('anti-enumeration', () => {
  it('request-reset answers identically and in the same median time for known and unknown emails (200 each)', async () => {
    const known: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 200; i += 1) {
      const k = await timed(() => p.api('/auth/request-reset', { body: { email: user.email } }));
      const u = await timed(() => p.api('/auth/request-reset', { body: { email: uniqueEmail('nobody') } }));
      expect([k.res.status, k.res.body]).toEqual([u.res.status, u.res.body]);
      known.push(k.ms);
      unknown.push(u.ms);
    }
    expectSameTime(known, unknown);
  });

  it('invite answers the same shape and in the same median time for registered and unregistered emails (200 each)', async () => {
    const registered = await registerUser(p);
    const roleId = (await p.api('/rbac/roles', { token: user.accessToken })).body.data[0].id;
    const known: number[] = [];
    const unknown: number[] = [];
    const shape = (body: unknown) => Object.keys(body as object).sort();
    for (let i = 0; i < 200; i += 1) {
      const k = await timed(() =>
        p.api('/auth/invite', { token: user.accessToken, body: { email: registered.email, role_id: roleId } }),
      );
      const u = await timed(() =>
        p.api('/auth/invite', { token: user.accessToken, body: { email: uniqueEmail('nobody'), role_id: roleId } }),
      );
      expect(k.res.status).toBe(202);
      expect(u.res.status).toBe(202);
      expect(shape(k.res.body)).toEqual(shape(u.res.body));
      known.push(k.ms);
      unknown.push(u.ms);
    }
    expectSameTime(known, unknown);
  });
});
