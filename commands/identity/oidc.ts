import * as client from 'openid-client';
import { LIFETIMES } from '../../domain/identity/constants';
import { commonErrors, isDomainError } from '../../domain/shared/errors';
import type { OidcProviderConfig } from '../../infra/config';
import { identityRuntime } from '../../projections/identity/shared/runtime';
import type { Kernel } from '../../infra/kernel';
import { Guard } from '../../infra/resilience/guard';
import { hashToken, isOpaqueToken, newOpaqueToken } from '../../infra/security/one-time-tokens';
import type { ExternalIdentity, Intent, LoginProvider } from './providers';
import { consumeOneTimeToken, createOneTimeToken } from './tokens';

/**
 * An OpenID Connect login provider, through openid-client (the protocol: discovery, the
 * authorization URL, the code exchange with PKCE S256, the ID token's signature against the
 * provider's JWKS and its iss, aud, exp, iat, nonce and azp, the RFC 9207 iss parameter,
 * userinfo). Every request to the provider goes through the upstream guard (a deadline, a
 * circuit breaker per provider; infra/resilience/guard.ts). What is ours: the state (a one-time
 * token whose row holds the sealed verifier and nonce), the exact issuer of the configuration,
 * the refusals as problems, and the identity made of the claims (userinfo fills what the ID token
 * lacks, when its sub is the ID token's).
 */
const DISCOVERY_TTL_MS = 3600_000;
const HTTP_TIMEOUT_MS = 5_000;
const CLOCK_TOLERANCE_S = 60;

const fail = (detail: string) => commonErrors.unauthorized(detail);
const unreachable = () => commonErrors.serviceUnavailable('The login provider is not reachable.');

/** a failure to reach the provider (the guard's 502/503/504, as openid-client hands it on), as opposed to an answer of it */
const isTransportFailure = (error: unknown): boolean =>
  isDomainError(error) ||
  (error instanceof Error && isDomainError(error.cause)) ||
  (error instanceof client.ClientError && /TIMEOUT|ABORT/.test(error.code ?? ''));

const claim = (value: unknown): string => (typeof value === 'string' ? value : '');

export const oidcProvider = (kernel: Kernel, config: OidcProviderConfig): LoginProvider => {
  let discovered: { at: number; configuration: client.Configuration } | null = null;
  const redirectUri = `${kernel.config.rootUrl}/v1/auth/callback/${config.id}`;
  const guard = new Guard({ name: `oidc:${config.id}`, timeoutMs: HTTP_TIMEOUT_MS });
  // every request to the provider (discovery, JWKS, token, userinfo) under a deadline and the provider's breaker
  const guardedFetch: client.CustomFetch = (url, options) =>
    guard.run((deadline) =>
      fetch(url, { ...options, signal: options.signal ? AbortSignal.any([options.signal, deadline]) : deadline }),
    );
  const insecure = new URL(config.issuer).protocol === 'http:';

  const configure = (metadata: client.ServerMetadata): client.Configuration => {
    // client_secret_basic unless the provider offers client_secret_post alone
    const methods = metadata.token_endpoint_auth_methods_supported ?? ['client_secret_basic'];
    const auth =
      methods.includes('client_secret_basic') || !methods.includes('client_secret_post')
        ? client.ClientSecretBasic(config.clientSecret)
        : client.ClientSecretPost(config.clientSecret);
    const configuration = new client.Configuration(
      metadata,
      config.clientId,
      { [client.clockTolerance]: CLOCK_TOLERANCE_S },
      auth,
    );
    configuration[client.customFetch] = guardedFetch;
    configuration.timeout = HTTP_TIMEOUT_MS / 1000;
    if (insecure) client.allowInsecureRequests(configuration);
    return configuration;
  };

  const discover = async (): Promise<client.Configuration> => {
    const now = kernel.clock.now().getTime();
    if (discovered && now - discovered.at < DISCOVERY_TTL_MS) return discovered.configuration;
    let metadata: client.ServerMetadata;
    try {
      const found = await client.discovery(new URL(config.issuer), config.clientId, undefined, undefined, {
        [client.customFetch]: guardedFetch,
        timeout: HTTP_TIMEOUT_MS / 1000,
        ...(insecure ? { execute: [client.allowInsecureRequests] } : {}),
      });
      metadata = found.serverMetadata();
    } catch (error) {
      kernel.logger.warn({ err: error, provider: config.id }, 'OpenID discovery failed');
      throw unreachable();
    }
    // OpenID Connect Discovery 1.0 §4.3: the issuer in the document is the configured one, exactly
    if (metadata.issuer !== config.issuer)
      throw commonErrors.serviceUnavailable('The login provider announced another issuer.');
    discovered = { at: now, configuration: configure(metadata) };
    return discovered.configuration;
  };

  /** userinfo, for the claims the ID token lacks; nothing when it fails or names another subject (OIDC Core §5.3.2) */
  const userinfo = async (
    configuration: client.Configuration,
    accessToken: string,
    sub: string,
  ): Promise<Record<string, unknown> | null> => {
    if (!configuration.serverMetadata().userinfo_endpoint) return null;
    try {
      return await client.fetchUserInfo(configuration, accessToken, sub);
    } catch (error) {
      kernel.logger.info({ err: error, provider: config.id }, 'OpenID userinfo not used');
      return null;
    }
  };

  return {
    id: config.id,
    type: 'oidc',
    name: config.name ?? config.id,

    async start(intent) {
      const configuration = await discover();
      const state = newOpaqueToken();
      const nonce = client.randomNonce();
      const codeVerifier = client.randomPKCECodeVerifier();
      const sealed = identityRuntime(kernel).box.seal(
        JSON.stringify({ nonce, codeVerifier }),
        `oidc:${hashToken(state)}`,
      );
      await createOneTimeToken(kernel, kernel.db, {
        purpose: 'oauth-state',
        ttlMs: LIFETIMES.oauthStateMs,
        token: state,
        userId: intent.kind === 'link' ? intent.userId : null,
        tenantId: intent.kind === 'link' ? intent.tenantId : null,
        payload: { providerId: config.id, intent: intent.kind, sealed },
      });
      const url = client.buildAuthorizationUrl(configuration, {
        redirect_uri: redirectUri,
        scope: config.scopes.join(' '),
        state,
        nonce,
        code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
      });
      return { redirectUrl: url.toString(), state };
    },

    async complete(input) {
      const state = input.state ?? '';
      if (!isOpaqueToken(state)) throw fail('The state parameter is missing or malformed.');
      // single use: a replayed callback finds no state
      const row = await consumeOneTimeToken(kernel, kernel.db, 'oauth-state', state, 'state');
      if (row.payload.providerId !== config.id) throw fail('The state belongs to another provider.');
      if (input.error)
        throw fail(
          `The provider refused the login: ${input.error}${input.error_description ? ` (${input.error_description})` : ''}.`,
        );
      const configuration = await discover();
      // RFC 9207: when the provider names itself in the response it must be the expected issuer (mix-up attacks)
      if (input.iss !== undefined && input.iss !== configuration.serverMetadata().issuer)
        throw fail('The response comes from another issuer.');
      if (!input.code) throw fail('The code parameter is missing.');
      const { nonce, codeVerifier } = JSON.parse(
        identityRuntime(kernel).box.openString(String(row.payload.sealed), `oidc:${hashToken(state)}`),
      ) as { nonce: string; codeVerifier: string };

      const callback = new URL(redirectUri);
      for (const key of ['code', 'state', 'iss'] as const)
        if (input[key] !== undefined) callback.searchParams.set(key, input[key]);
      let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
      try {
        tokens = await client.authorizationCodeGrant(configuration, callback, {
          pkceCodeVerifier: codeVerifier,
          expectedState: state,
          expectedNonce: nonce,
          idTokenExpected: true,
        });
      } catch (error) {
        if (isTransportFailure(error)) {
          kernel.logger.warn({ err: error, provider: config.id }, 'OpenID token exchange failed');
          throw unreachable();
        }
        if (error instanceof client.ResponseBodyError) throw fail(`The provider refused the code (${error.error}).`);
        kernel.logger.info({ err: error, provider: config.id }, 'ID token refused');
        const cause = error instanceof Error ? error.cause : undefined;
        if (cause instanceof Error && /"nonce"/.test(cause.message)) throw fail('The ID token nonce does not match.');
        throw fail('The ID token is not valid.');
      }
      const claims = tokens.claims();
      if (!claims) throw fail('The ID token is not valid.');
      // several audiences: the authorized party must be us (OIDC Core §3.1.3.7)
      if (Array.isArray(claims.aud) && claims.aud.length > 1 && claims.azp !== config.clientId)
        throw fail('The ID token was issued to another party.');

      let info: Record<string, unknown> = claims;
      if (claims.email === undefined || claims.name === undefined) {
        const extra = await userinfo(configuration, tokens.access_token, claims.sub);
        if (extra) info = { ...extra, ...claims };
      }
      const email = claim(info.email).trim().toLowerCase();
      const name =
        claim(info.name) || [info.given_name, info.family_name].filter((x) => typeof x === 'string').join(' ');
      const found: ExternalIdentity = {
        providerId: config.id,
        providerType: 'oidc',
        externalId: claims.sub,
        email,
        emailVerified: email !== '' && info.email_verified === true,
        displayName: name || email || claims.sub,
        firstName: claim(info.given_name),
        lastName: claim(info.family_name),
      };
      const intent: Intent =
        row.payload.intent === 'link' && row.userId && row.tenantId
          ? { kind: 'link', userId: row.userId, tenantId: row.tenantId }
          : { kind: 'login' };
      return { identity: found, intent };
    },
  };
};
