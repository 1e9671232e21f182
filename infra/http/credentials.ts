import type { IncomingHttpHeaders } from 'node:http';
import type { Principal } from './auth';

/**
 * Bearer credentials other than the access tokens of the installed authenticator: a scheme
 * recognises its own tokens by their form (module keys start with `pmk_`) and turns them into a
 * principal. The edge asks the schemes first, then the authenticator (identity, or a test's). A
 * service installs its scheme from its RoutePlugin.start.
 */
export interface CredentialScheme {
  accepts(token: string): boolean;
  /** the caller's principal; throws a 401 (or the scheme's own refusal) when it cannot */
  authenticate(token: string, headers: IncomingHttpHeaders): Promise<Principal>;
}

const installed = new WeakMap<object, CredentialScheme[]>();

export const addCredentialScheme = (kernel: object, scheme: CredentialScheme): void => {
  const schemes = installed.get(kernel) ?? [];
  if (!schemes.includes(scheme)) schemes.push(scheme);
  installed.set(kernel, schemes);
};

export const credentialSchemeFor = (kernel: object, token: string): CredentialScheme | undefined =>
  installed.get(kernel)?.find((s) => s.accepts(token));
