import type { ProviderInfo } from './views';

/**
 * The login providers a platform offers (GET /auth/providers): `password` (POST /auth/login
 * itself), the OpenID Connect providers of its configuration, and Sign-In with Ethereum, which is
 * always installed. The command side's registry (commands/identity/providers.ts) holds the same
 * list with the code that runs each one.
 */
export const PASSWORD_PROVIDER: ProviderInfo = { id: 'password', type: 'password', name: 'Email and password' };
export const SIWE_PROVIDER: ProviderInfo = { id: 'siwe', type: 'wallet', name: 'Sign-In with Ethereum' };

export const oidcProviderInfo = (config: { id: string; name?: string }): ProviderInfo => ({
  id: config.id,
  type: 'oidc',
  name: config.name ?? config.id,
});

/** the providers besides password, in the order the registry installs them */
export const externalProviders = (oidc: readonly { id: string; name?: string }[]): ProviderInfo[] => [
  ...oidc.map(oidcProviderInfo),
  SIWE_PROVIDER,
];

export const providerCatalog = (oidc: readonly { id: string; name?: string }[]): ProviderInfo[] => [
  PASSWORD_PROVIDER,
  ...externalProviders(oidc),
];
