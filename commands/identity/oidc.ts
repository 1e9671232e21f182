import { createHash, randomBytes } from 'node:crypto';
import type { JWTPayload, JWTVerifyGetKey } from 'jose';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { LIFETIMES } from '../../domain/identity/constants';
import { commonErrors } from '../../domain/shared/errors';
import type { OidcProviderConfig } from '../../infra/config';
import type { Kernel } from '../../infra/kernel';
import { hashToken, isOpaqueToken, newOpaqueToken } from '../../infra/security/one-time-tokens';
import type { ExternalIdentity, Intent, LoginProvider } from './providers';
import { identityRuntime as identity } from '../../infra/identity/runtime';
import { consumeOneTimeToken, createOneTimeToken } from './tokens';

/**
 * An OpenID Connect login provider: authorization code flow with PKCE (S256), state and nonce;
 * the provider's endpoints come from discovery, the ID token is verified with its JWKS (issuer,
 * audience = our client id, expiry, nonce; asymmetric algorithms only). Claims the ID token lacks
 * (email, name: many providers put them in userinfo only) are read from the userinfo endpoint.
 */
interface Discovery {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
  userinfo_endpoint?: string;
  token_endpoint_auth_methods_supported?: string[];
  code_challenge_methods_supported?: string[];
}

const DISCOVERY_TTL_MS = 3600_000;
const HTTP_TIMEOUT_MS = 5_000;
/** asymmetric only: an HS256 ID token would be signed with our client secret (alg confusion) */
const ID_TOKEN_ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
const CLOCK_TOLERANCE_S = 60;

const fail = (detail: string) => commonErrors.unauthorized(detail);

const b64urlSha256 = (value: string) => createHash('sha256').update(value).digest('base64url');

export const oidcProvider = (kernel: Kernel, config: OidcProviderConfig): LoginProvider => {
  let discovery: { at: number; doc: Discovery; jwks: JWTVerifyGetKey } | null = null;
  const redirectUri = `${kernel.config.rootUrl}/v1/auth/callback/${config.id}`;

  const discover = async () => {
    if (discovery && Date.now() - discovery.at < DISCOVERY_TTL_MS) return discovery;
    const url = `${config.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
    let doc: Discovery;
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(HTTP_TIMEOUT_MS), headers: { accept: 'application/json' } });
      if (!res.ok) throw new Error(`discovery answered ${res.status}`);
      doc = await res.json() as Discovery;
    } catch (error) {
      kernel.logger.warn({ err: error, provider: config.id }, 'OpenID discovery failed');
      throw commonErrors.serviceUnavailable('The login provider is not reachable.');
    }
    // OpenID Connect Discovery 1.0 §4.3: the issuer in the document must be the configured one exactly
    if (doc.issuer !== config.issuer) throw commonErrors.serviceUnavailable('The login provider announced another issuer.');
    discovery = { at: Date.now(), doc, jwks: createRemoteJWKSet(new URL(doc.jwks_uri), { timeoutDuration: HTTP_TIMEOUT_MS }) };
    return discovery;
  };

  return {
    id: config.id, type: 'oidc', name: config.name ?? config.id,

    async start(intent) {
      const { doc } = await discover();
      const state = newOpaqueToken();
      const nonce = newOpaqueToken();
      const codeVerifier = randomBytes(32).toString('base64url');
      const sealed = identity(kernel).box.seal(JSON.stringify({ nonce, codeVerifier }), `oidc:${hashToken(state)}`);
      await createOneTimeToken(kernel, kernel.db, {
        purpose: 'oauth-state', ttlMs: LIFETIMES.oauthStateMs, token: state,
        userId: intent.kind === 'link' ? intent.userId : null, tenantId: intent.kind === 'link' ? intent.tenantId : null,
        payload: { providerId: config.id, intent: intent.kind, sealed },
      });
      const url = new URL(doc.authorization_endpoint);
      const params = {
        response_type: 'code', client_id: config.clientId, redirect_uri: redirectUri, scope: config.scopes.join(' '),
        state, nonce, code_challenge: b64urlSha256(codeVerifier), code_challenge_method: 'S256',
      };
      for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
      return { redirectUrl: url.toString(), state };
    },

    async complete(input) {
      const state = input.state ?? '';
      if (!isOpaqueToken(state)) throw fail('The state parameter is missing or malformed.');
      // single use: a replayed callback finds no state
      const row = await consumeOneTimeToken(kernel, kernel.db, 'oauth-state', state, 'state');
      if (row.payload.providerId !== config.id) throw fail('The state belongs to another provider.');
      if (input.error) throw fail(`The provider refused the login: ${input.error}${input.error_description ? ` (${input.error_description})` : ''}.`);
      const { doc, jwks } = await discover();
      // RFC 9207: when the provider names itself in the response it must be the expected issuer (mix-up attacks)
      if (input.iss !== undefined && input.iss !== doc.issuer) throw fail('The response comes from another issuer.');
      if (!input.code) throw fail('The code parameter is missing.');
      const { nonce, codeVerifier } = JSON.parse(identity(kernel).box.openString(String(row.payload.sealed), `oidc:${hashToken(state)}`)) as { nonce: string; codeVerifier: string };

      const tokens = await exchange(doc, input.code, codeVerifier);
      let claims: JWTPayload;
      try {
        ({ payload: claims } = await jwtVerify(tokens.id_token, jwks, {
          issuer: doc.issuer, audience: config.clientId, algorithms: ID_TOKEN_ALGS, clockTolerance: CLOCK_TOLERANCE_S, requiredClaims: ['sub', 'exp', 'iat'],
        }));
      } catch (error) {
        kernel.logger.info({ err: error, provider: config.id }, 'ID token refused');
        throw fail('The ID token is not valid.');
      }
      if (claims.nonce !== nonce) throw fail('The ID token nonce does not match.');
      // several audiences: the authorized party must be us (OIDC Core §3.1.3.7)
      if (Array.isArray(claims.aud) && claims.aud.length > 1 && claims.azp !== config.clientId) throw fail('The ID token was issued to another party.');

      let info: Record<string, unknown> = claims;
      if ((claims.email === undefined || claims.name === undefined) && doc.userinfo_endpoint && tokens.access_token) {
        const extra = await userinfo(doc.userinfo_endpoint, tokens.access_token);
        // OIDC Core §5.3.2: the userinfo sub must be the ID token's, or the answer is discarded
        if (extra && extra.sub === claims.sub) info = { ...extra, ...claims };
      }
      const email = typeof info.email === 'string' ? info.email.trim().toLowerCase() : '';
      const name = typeof info.name === 'string' ? info.name : [info.given_name, info.family_name].filter((x) => typeof x === 'string').join(' ');
      const found: ExternalIdentity = {
        providerId: config.id, providerType: 'oidc', externalId: String(claims.sub), email,
        emailVerified: email !== '' && info.email_verified === true, displayName: name || email || String(claims.sub),
        firstName: typeof info.given_name === 'string' ? info.given_name : '', lastName: typeof info.family_name === 'string' ? info.family_name : '',
      };
      const intent: Intent = row.payload.intent === 'link' && row.userId && row.tenantId ? { kind: 'link', userId: row.userId, tenantId: row.tenantId } : { kind: 'login' };
      return { identity: found, intent };
    },
  };

  async function exchange(doc: Discovery, code: string, codeVerifier: string): Promise<{ id_token: string; access_token?: string }> {
    const body = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: codeVerifier });
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
    const methods = doc.token_endpoint_auth_methods_supported ?? ['client_secret_basic'];
    if (methods.includes('client_secret_basic') || !methods.includes('client_secret_post')) {
      // RFC 6749 §2.3.1: form-encode both parts before the Basic scheme
      headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(config.clientId)}:${encodeURIComponent(config.clientSecret)}`).toString('base64')}`;
    } else {
      body.set('client_id', config.clientId);
      body.set('client_secret', config.clientSecret);
    }
    let res: Response;
    try {
      res = await fetch(doc.token_endpoint, { method: 'POST', headers, body, signal: AbortSignal.timeout(HTTP_TIMEOUT_MS) });
    } catch (error) {
      kernel.logger.warn({ err: error, provider: config.id }, 'OpenID token exchange failed');
      throw commonErrors.serviceUnavailable('The login provider is not reachable.');
    }
    const answer = await res.json().catch(() => ({})) as { id_token?: string; access_token?: string; error?: string };
    if (!res.ok || typeof answer.id_token !== 'string') throw fail(`The provider refused the code${answer.error ? ` (${answer.error})` : ''}.`);
    return { id_token: answer.id_token, ...(typeof answer.access_token === 'string' ? { access_token: answer.access_token } : {}) };
  }

  async function userinfo(endpoint: string, accessToken: string): Promise<Record<string, unknown> | null> {
    try {
      const res = await fetch(endpoint, { headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' }, signal: AbortSignal.timeout(HTTP_TIMEOUT_MS) });
      if (!res.ok || !(res.headers.get('content-type') ?? '').includes('json')) return null;
      return await res.json() as Record<string, unknown>;
    } catch {
      return null;
    }
  }
};
