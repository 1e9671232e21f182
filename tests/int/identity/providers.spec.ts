import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createSiweMessage } from 'viem/siwe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { totpCode } from '../../../infra/security/totp';
import type { IdentityPlatform, Registered } from '../../support/identity';
import { addMember, mailToken, registerUser, startIdentityPlatform, uniqueEmail } from '../../support/identity';
import type { TestIdp } from '../../support/test-idp';
import { reserveTestIdp } from '../../support/test-idp';

const ROOT = 'https://app.example.test';
let p: IdentityPlatform;
let idp: TestIdp;

beforeAll(async () => {
  idp = await reserveTestIdp();
  p = await startIdentityPlatform({
    env: {
      ROOT_URL: ROOT,
      OIDC_PROVIDERS: JSON.stringify([
        {
          id: 'test-idp',
          name: 'Test IdP',
          issuer: idp.issuer,
          clientId: idp.clientId,
          clientSecret: idp.clientSecret,
        },
      ]),
    },
  });
  await idp.start(`${ROOT}/v1/auth/callback/test-idp`);
});
afterAll(async () => {
  await p?.close();
  await idp?.close();
});

let subs = 0;
const idpAccount = (o: { email?: string; email_verified?: boolean; name?: string } = {}) => {
  const sub = `sub-${process.pid}-${(subs += 1)}`;
  idp.accounts.set(sub, { sub, name: 'Grace Hopper', given_name: 'Grace', family_name: 'Hopper', ...o });
  return sub;
};

/** the whole redirect → login at the IdP → callback path, for real */
const oidcLogin = async (sub: string, start?: { redirectUrl: string }, token?: string) => {
  const begin = start ?? (await p.api('/auth/login/test-idp', { method: 'POST' })).body;
  const back = await idp.login(begin.redirectUrl, sub);
  expect(back.origin + back.pathname).toBe(`${ROOT}/v1/auth/callback/test-idp`);
  return p.api(`/auth/callback/test-idp${back.search}`, token ? { token } : {});
};

const verifiedUser = async (): Promise<Registered> => {
  const user = await registerUser(p);
  const token = await mailToken(p, user.email, 'verify-email');
  expect((await p.api('/auth/verify-email', { body: { token } })).status).toBe(200);
  return user;
};

const claims = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString());

describe('the provider registry', () => {
  it('lists password, the configured OpenID provider and the wallet provider', async () => {
    const res = await p.api('/auth/providers');
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([
      { id: 'password', type: 'password', name: 'Email and password' },
      { id: 'test-idp', type: 'oidc', name: 'Test IdP' },
      { id: 'siwe', type: 'wallet', name: 'Sign-In with Ethereum' },
    ]);
  });

  it('answers 404 for an unknown provider', async () => {
    expect((await p.api('/auth/login/nope', { method: 'POST' })).status).toBe(404);
    expect((await p.api('/auth/callback/nope?code=x&state=y')).status).toBe(404);
  });
});

describe('OpenID Connect login', () => {
  it('given a login start, the redirect URL carries state, nonce and an S256 PKCE challenge', async () => {
    const res = await p.api('/auth/login/test-idp', { method: 'POST' });
    expect(res.status).toBe(200);
    const url = new URL(res.body.redirectUrl);
    expect(url.origin).toBe(idp.issuer);
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      response_type: 'code',
      client_id: idp.clientId,
      redirect_uri: `${ROOT}/v1/auth/callback/test-idp`,
      state: res.body.state,
      code_challenge_method: 'S256',
      code_challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      nonce: expect.any(String),
      scope: 'openid email profile',
    });
  });

  it('given a new person, when they sign in at the provider, then an account, a tenant and a link are made and a camelCase pair answers', async () => {
    const email = uniqueEmail('oidc');
    const sub = idpAccount({ email, email_verified: true });
    const res = await oidcLogin(sub);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['accessToken', 'expiresAt', 'refreshToken']);
    const me = await p.api('/auth/me', { token: res.body.accessToken });
    expect(me.body).toMatchObject({
      email,
      emailVerified: true,
      firstName: 'Grace',
      lastName: 'Hopper',
      roles: ['Owner'],
    });
    const links = await p.api(`/users/${me.body.id}/providers`, { token: res.body.accessToken });
    expect(links.body.data).toEqual([
      {
        id: expect.any(String),
        providerId: 'test-idp',
        providerType: 'oidc',
        externalId: sub,
        email,
        displayName: 'Grace Hopper',
        linkedAt: expect.any(String),
      },
    ]);
    // the second sign-in finds the same account through the link
    const again = await oidcLogin(sub);
    expect(claims(again.body.accessToken).sub).toBe(me.body.id);
  });

  it('given a used or forged state, the callback answers 401', async () => {
    const sub = idpAccount({ email: uniqueEmail('oidc') });
    const begin = (await p.api('/auth/login/test-idp', { method: 'POST' })).body;
    const back = await idp.login(begin.redirectUrl, sub);
    expect((await p.api(`/auth/callback/test-idp${back.search}`)).status).toBe(200);
    const replay = await p.api(`/auth/callback/test-idp${back.search}`);
    expect(replay.status).toBe(401);
    const forged = new URLSearchParams(back.search);
    forged.set('state', 'A'.repeat(43));
    expect((await p.api(`/auth/callback/test-idp?${forged.toString()}`)).status).toBe(401);
    expect((await p.api('/auth/callback/test-idp?code=abc')).status).toBe(401);
  });

  it('given a code with a state that was not issued with it, the provider refuses the exchange (PKCE) and the callback answers 401', async () => {
    const sub = idpAccount({ email: uniqueEmail('oidc') });
    const first = (await p.api('/auth/login/test-idp', { method: 'POST' })).body;
    const second = (await p.api('/auth/login/test-idp', { method: 'POST' })).body;
    const back = await idp.login(first.redirectUrl, sub);
    const swapped = new URLSearchParams(back.search);
    swapped.set('state', second.state); // the code of the first flow with the verifier of the second
    const res = await p.api(`/auth/callback/test-idp?${swapped.toString()}`);
    expect(res.status).toBe(401);
  });

  it('given a person who refuses at the provider, the callback answers 401', async () => {
    const begin = (await p.api('/auth/login/test-idp', { method: 'POST' })).body;
    const back = await idp.login(begin.redirectUrl, 'deny');
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect((await p.api(`/auth/callback/test-idp${back.search}`)).status).toBe(401);
  });

  it('given an account with the same verified email, a provider-verified email signs in to it (and links)', async () => {
    const user = await verifiedUser();
    const res = await oidcLogin(idpAccount({ email: user.email, email_verified: true }));
    expect(res.status).toBe(200);
    expect(claims(res.body.accessToken).sub).toBe(user.userId);
  });

  it('given an account with the same email, an unverified claim or an unverified account is refused with 409', async () => {
    const verified = await verifiedUser();
    const notByProvider = await oidcLogin(idpAccount({ email: verified.email, email_verified: false }));
    expect(notByProvider.status).toBe(409);
    const unverified = await registerUser(p);
    const notByUs = await oidcLogin(idpAccount({ email: unverified.email, email_verified: true }));
    expect(notByUs.status).toBe(409);
  });
});

describe('linking and unlinking', () => {
  it('given a signed-in user, linking through the provider answers 202, the callback 201 with the link, and the provider then signs them in', async () => {
    const user = await registerUser(p);
    const sub = idpAccount({ email: uniqueEmail('other') });
    const start = await p.api(`/users/${user.userId}/providers/test-idp`, { method: 'POST', token: user.accessToken });
    expect(start.status).toBe(202);
    const linked = await oidcLogin(sub, start.body, user.accessToken);
    expect(linked.status).toBe(201);
    expect(linked.body).toMatchObject({ providerId: 'test-idp', providerType: 'oidc', externalId: sub });
    expect((await p.api(`/users/${user.userId}/providers`, { token: user.accessToken })).body.data).toHaveLength(1);
    const login = await oidcLogin(sub);
    expect(claims(login.body.accessToken).sub).toBe(user.userId);
    // a second link to the same provider is a conflict
    const again = await oidcLogin(
      idpAccount(),
      (await p.api(`/users/${user.userId}/providers/test-idp`, { method: 'POST', token: user.accessToken })).body,
      user.accessToken,
    );
    expect(again.status).toBe(409);
    // with a password the link can go
    const unlink = await p.api(`/users/${user.userId}/providers/test-idp`, {
      method: 'DELETE',
      token: user.accessToken,
    });
    expect(unlink.status).toBe(204);
    expect((await p.api(`/users/${user.userId}/providers`, { token: user.accessToken })).body.data).toEqual([]);
    expect(
      (await p.api(`/users/${user.userId}/providers/test-idp`, { method: 'DELETE', token: user.accessToken })).status,
    ).toBe(404);
  });

  it("given a link started by one user, completing it without their token or with another user's answers 401 and links nothing", async () => {
    const user = await registerUser(p);
    const stranger = await registerUser(p);
    const start = async () =>
      (await p.api(`/users/${user.userId}/providers/test-idp`, { method: 'POST', token: user.accessToken })).body;
    expect((await oidcLogin(idpAccount(), await start())).status).toBe(401);
    expect((await oidcLogin(idpAccount(), await start(), stranger.accessToken)).status).toBe(401);
    expect((await p.api(`/users/${user.userId}/providers`, { token: user.accessToken })).body.data).toEqual([]);
  });

  it('given an identity linked to another user, linking it answers 409 provider-already-linked', async () => {
    const sub = idpAccount({ email: uniqueEmail('taken') });
    expect((await oidcLogin(sub)).status).toBe(200);
    const user = await registerUser(p);
    const start = (await p.api(`/users/${user.userId}/providers/test-idp`, { method: 'POST', token: user.accessToken }))
      .body;
    const res = await oidcLogin(sub, start, user.accessToken);
    expect(res.status).toBe(409);
    expect(res.body.type).toMatch(/\/provider-already-linked$/);
  });

  it('given an account whose only way in is the provider, unlinking answers 400 last-provider', async () => {
    const login = await oidcLogin(idpAccount({ email: uniqueEmail('only') }));
    const userId = claims(login.body.accessToken).sub;
    const res = await p.api(`/users/${userId}/providers/test-idp`, { method: 'DELETE', token: login.body.accessToken });
    expect(res.status).toBe(400);
    expect(res.body.type).toMatch(/\/last-provider$/);
  });

  it("keeps tenants apart: another tenant's user is 404 on every provider route, and nobody links for someone else (403)", async () => {
    const a = await registerUser(p);
    const b = await registerUser(p);
    expect((await p.api(`/users/${b.userId}/providers`, { token: a.accessToken })).status).toBe(404);
    expect(
      (await p.api(`/users/${b.userId}/providers/test-idp`, { method: 'POST', token: a.accessToken })).status,
    ).toBe(404);
    expect(
      (await p.api(`/users/${b.userId}/providers/test-idp`, { method: 'DELETE', token: a.accessToken })).status,
    ).toBe(404);
    const member = await addMember(p, a);
    expect(
      (await p.api(`/users/${member.userId}/providers/test-idp`, { method: 'POST', token: a.accessToken })).status,
    ).toBe(403);
    expect((await p.api(`/users/${a.userId}/providers/test-idp`, { method: 'POST' })).status).toBe(401);
  });
});

describe('Sign-In with Ethereum', () => {
  const wallet = () => privateKeyToAccount(generatePrivateKey());
  const start = async () => (await p.api('/auth/login/siwe', { method: 'POST' })).body;
  const signed = async (account = wallet(), override: Record<string, unknown> = {}, signer = account) => {
    const s = await start();
    const message = createSiweMessage({
      address: account.address,
      chainId: s.chainId,
      domain: s.domain,
      nonce: s.nonce,
      uri: s.uri,
      version: '1',
      statement: s.statement,
      issuedAt: new Date(s.issuedAt),
      expirationTime: new Date(s.expirationTime),
      ...override,
    });
    return { account, message, signature: await signer.signMessage({ message }) };
  };
  const verify = (body: { message: string; signature: string }) =>
    p.api('/auth/callback/siwe', { body: { message: body.message, signature: body.signature } });

  it('given a login start, answers a nonce and the message parameters', async () => {
    const s = await start();
    expect(s).toMatchObject({
      nonce: expect.stringMatching(/^[a-f0-9]{32}$/),
      domain: 'app.example.test',
      uri: ROOT,
      version: '1',
      chainId: 1,
    });
  });

  it('given a valid signed message, answers a camelCase pair; the same wallet signs in to the same account', async () => {
    const first = await signed();
    const res = await verify(first);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['accessToken', 'expiresAt', 'refreshToken']);
    const me = await p.api('/auth/me', { token: res.body.accessToken });
    const links = await p.api(`/users/${me.body.id}/providers`, { token: res.body.accessToken });
    expect(links.body.data[0]).toMatchObject({
      providerId: 'siwe',
      providerType: 'wallet',
      externalId: first.account.address,
    });
    // also through GET with the query parameters
    const second = await signed(first.account);
    const viaGet = await p.api(
      `/auth/callback/siwe?${new URLSearchParams({ message: second.message, signature: second.signature }).toString()}`,
    );
    expect(viaGet.status).toBe(200);
    expect(claims(viaGet.body.accessToken).sub).toBe(me.body.id);
  });

  it('given a replayed nonce, answers 401', async () => {
    const body = await signed();
    expect((await verify(body)).status).toBe(200);
    expect((await verify(body)).status).toBe(401);
  });

  it('given 10 copies of one signed message at the same moment, exactly one succeeds', async () => {
    const body = await signed();
    const answers = await Promise.all(Array.from({ length: 10 }, () => verify(body)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 401, 401, 401, 401, 401, 401, 401, 401, 401]);
  });

  it("given a wrong domain, a wrong chain, an expired message, a stale nonce, a tampered message or another key's signature, answers 401", async () => {
    const cases: Record<string, { message: string; signature: string }> = {
      'wrong domain': await signed(wallet(), { domain: 'evil.example' }),
      'wrong uri': await signed(wallet(), { uri: 'https://evil.example' }),
      'wrong chain': await signed(wallet(), { chainId: 5 }),
      expired: await signed(wallet(), { expirationTime: new Date(Date.now() - 1000) }),
      'issued long ago': await signed(wallet(), { issuedAt: new Date(Date.now() - 3600_000) }),
      'unknown nonce': await signed(wallet(), { nonce: 'ab'.repeat(16) }),
      'another key': await signed(wallet(), {}, wallet()),
    };
    const honest = await signed();
    cases.tampered = {
      message: honest.message.replace('Sign in to the platform.', 'Sign in to the platform!'),
      signature: honest.signature,
    };
    cases['garbage signature'] = { message: honest.message, signature: `0x${'11'.repeat(65)}` };
    for (const [name, body] of Object.entries(cases)) expect([name, (await verify(body)).status]).toEqual([name, 401]);
    // the honest message still works: refusals did not burn its nonce
    expect((await verify(honest)).status).toBe(200);
    const late = await signed();
    p.clock.advance(11 * 60_000);
    try {
      expect((await verify(late)).status).toBe(401);
    } finally {
      p.clock.reset();
    }
  });

  it('given a signed-in user, links a wallet (201), refuses it for another user (409 provider-already-linked), and keeps the last provider of a wallet account (400)', async () => {
    const user = await registerUser(p);
    const body = await signed();
    const link = await p.api(`/users/${user.userId}/providers/siwe`, {
      token: user.accessToken,
      body: { message: body.message, signature: body.signature },
    });
    expect(link.status).toBe(201);
    expect(link.body).toMatchObject({ providerId: 'siwe', providerType: 'wallet', externalId: body.account.address });
    const other = await registerUser(p);
    const again = await signed(body.account);
    const taken = await p.api(`/users/${other.userId}/providers/siwe`, {
      token: other.accessToken,
      body: { message: again.message, signature: again.signature },
    });
    expect(taken.status).toBe(409);
    expect(taken.body.type).toMatch(/\/provider-already-linked$/);
    const walletOnly = await verify(await signed());
    const id = claims(walletOnly.body.accessToken).sub;
    const last = await p.api(`/users/${id}/providers/siwe`, { method: 'DELETE', token: walletOnly.body.accessToken });
    expect(last.status).toBe(400);
    expect(last.body.type).toMatch(/\/last-provider$/);
  });

  it('given an account with MFA on, a wallet sign-in answers the mfa-required challenge and the TOTP step completes it', async () => {
    const user = await registerUser(p);
    const body = await signed();
    expect(
      (
        await p.api(`/users/${user.userId}/providers/siwe`, {
          token: user.accessToken,
          body: { message: body.message, signature: body.signature },
        })
      ).status,
    ).toBe(201);
    const now = () => Math.floor(p.clock.now().getTime() / 1000);
    const enable = await p.api('/auth/mfa/enable', { token: user.accessToken, body: {} });
    expect(
      (
        await p.api('/auth/mfa/verify', {
          token: user.accessToken,
          body: { code: totpCode(enable.body.secret, now()) },
        })
      ).status,
    ).toBe(200);
    const challenge = await verify(await signed(body.account));
    expect(challenge.status).toBe(401);
    expect(challenge.body).toMatchObject({ mfa_required: true, mfa_type: 'totp', mfa_token: expect.any(String) });
    p.clock.advance(30_000);
    try {
      const done = await p.api('/auth/mfa/verify', {
        body: { mfa_token: challenge.body.mfa_token, code: totpCode(enable.body.secret, now()) },
      });
      expect(done.status).toBe(200);
      expect(done.body.user.id).toBe(user.userId);
    } finally {
      p.clock.reset();
    }
  });
});
