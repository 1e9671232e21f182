import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider from 'oidc-provider';

/**
 * A real OpenID Connect provider in process (oidc-provider 8): code flow with PKCE (S256 required),
 * discovery, JWKS, userinfo. The login interaction is scripted: the test says which account the
 * person signs in as (or `deny` to refuse), and `login` follows the redirects with a cookie jar up
 * to the client's redirect_uri, which it returns with the code, state and iss.
 */
export interface IdpAccount {
  sub: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
  given_name?: string;
  family_name?: string;
}

export interface TestIdp {
  issuer: string;
  clientId: string;
  clientSecret: string;
  accounts: Map<string, IdpAccount>;
  /** registers the client with its redirect_uri and starts answering */
  start(redirectUri: string): Promise<void>;
  /** the browser's journey from the authorization URL to the redirect back to the client */
  /** sub: the account the user signs in with, or 'deny' to refuse the consent */
  login(authorizationUrl: string, sub: string): Promise<URL>;
  close(): Promise<void>;
}

export const reserveTestIdp = async (): Promise<TestIdp> => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const accounts = new Map<string, IdpAccount>();
  const clientId = 'platform-test';
  const clientSecret = 'a-long-test-client-secret-0123456789';

  return {
    issuer,
    clientId,
    clientSecret,
    accounts,
    async start(redirectUri) {
      const { privateKey } = await generateKeyPair('RS256', { extractable: true });
      const jwk = { ...(await exportJWK(privateKey)), kid: 'idp-1', alg: 'RS256', use: 'sig' };
      const provider = new Provider(issuer, {
        clients: [
          {
            client_id: clientId,
            client_secret: clientSecret,
            redirect_uris: [redirectUri],
            response_types: ['code'],
            grant_types: ['authorization_code'],
          },
        ],
        jwks: { keys: [jwk] },
        cookies: { keys: ['test-idp-cookie-key-0123456789'] },
        pkce: { methods: ['S256'], required: () => true },
        features: { devInteractions: { enabled: false } },
        claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'given_name', 'family_name'] },
        findAccount: async (_ctx: unknown, sub: string) => {
          const account = accounts.get(sub);
          return account ? { accountId: sub, claims: async () => ({ ...account }) } : undefined;
        },
        // first-party client: the grant is given without a consent screen
        loadExistingGrant: async (ctx: {
          oidc: {
            client: { clientId: string };
            session: { accountId: string; grantIdFor(id: string): string | undefined };
            provider: {
              Grant: {
                new (o: object): { addOIDCScope(s: string): void; save(): Promise<string> };
                find(id: string): Promise<unknown>;
              };
            };
          };
        }) => {
          const existing = ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
          if (existing) return ctx.oidc.provider.Grant.find(existing);
          const grant = new ctx.oidc.provider.Grant({
            clientId: ctx.oidc.client.clientId,
            accountId: ctx.oidc.session.accountId,
          });
          grant.addOIDCScope('openid email profile');
          await grant.save();
          return grant;
        },
      });
      const callback = provider.callback();
      server.on('request', (req, res) => {
        const url = new URL(req.url ?? '/', issuer);
        if (!url.pathname.startsWith('/interaction/')) return callback(req, res);
        void (async () => {
          await provider.interactionDetails(req, res);
          const who = url.searchParams.get('account') ?? 'deny';
          const result =
            who === 'deny' || !accounts.has(who)
              ? { error: 'access_denied', error_description: 'the person refused' }
              : { login: { accountId: who } };
          await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
        })().catch((error: unknown) => {
          res.statusCode = 500;
          res.end(String(error));
        });
        return undefined;
      });
    },
    async login(authorizationUrl, sub) {
      const jar = new Map<string, string>();
      let next = new URL(authorizationUrl);
      const origin = new URL(issuer).origin;
      for (let hop = 0; hop < 10; hop += 1) {
        if (next.origin !== origin) return next;
        if (next.pathname.startsWith('/interaction/')) next.searchParams.set('account', sub);
        const res = await fetch(next, {
          redirect: 'manual',
          headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') },
        });
        for (const cookie of res.headers.getSetCookie()) {
          const pair = cookie.split(';')[0]!;
          const at = pair.indexOf('=');
          const [name, value] = [pair.slice(0, at).trim(), pair.slice(at + 1)];
          if (value) jar.set(name, value);
          else jar.delete(name);
        }
        const location = res.headers.get('location');
        if (!location) throw new Error(`the IdP answered ${res.status} without a redirect: ${await res.text()}`);
        next = new URL(location, next);
      }
      throw new Error('too many redirects');
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};
