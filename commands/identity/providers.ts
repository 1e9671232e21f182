import { PLATFORM_TENANT_ID, LIFETIMES, OWNER_ROLE } from '../../domain/identity/constants';
import { identityErrors } from '../../domain/identity/errors';
import type { ProviderInfo, ProviderLinkView } from '../../domain/identity/views';
import { commonErrors } from '../../domain/shared/errors';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import type { Principal } from '../../infra/http/auth';
import { hasPermission } from '../../infra/http/auth';
import type { Kernel } from '../../infra/kernel';
import { hashToken } from '../../infra/security/one-time-tokens';
import { Account, accountStream, anonymousMeta, flushPlatform, platformUnit } from './aggregates';
import { findAccount } from './lookups';
import { providerLinks as linksOf } from '../../projections/identity/queries';
import { assertMember } from './membership';
import { oidcProvider } from './oidc';
import { claimEmail, normalizeEmail } from './passwords';
import { credentials } from './repositories/credentials';
import { providerLinks } from './repositories/provider-links';
import type { SessionOutcome } from './session';
import { assertNotLocked, camelAnswer, openSession } from './session';
import { siweProvider, verifySiwe } from './siwe';
import { createTenant, ownerPermissions, slugify } from './tenant';
import { createOneTimeToken } from './tokens';

/**
 * The registry of login providers. `password` is POST /auth/login itself; the others are
 * pluggable: each starts a login (POST /auth/login/:id) and completes it (the callback) with an
 * identity the provider proved. OpenID Connect providers come from OIDC_PROVIDERS; the wallet
 * provider (Sign-In with Ethereum) is always installed.
 */
export interface ExternalIdentity {
  providerId: string;
  providerType: string;
  /** unique per provider across all users: the OIDC sub, the checksummed wallet address */
  externalId: string;
  email: string;
  /** the provider asserts the person controls the address (OIDC email_verified) */
  emailVerified: boolean;
  displayName: string;
  firstName: string;
  lastName: string;
}

/** what the start recorded: a login, or a link of the identity to a signed-in user */
export type Intent = { kind: 'login' } | { kind: 'link'; userId: string; tenantId: string };

/** what POST /auth/login/:providerId answers: where to send the browser, or what the wallet must sign */
export type StartAnswer =
  | { redirectUrl: string; state: string }
  | {
      nonce: string;
      domain: string;
      uri: string;
      version: '1';
      chainId: number;
      chainIds: number[];
      statement: string;
      issuedAt: string;
      expirationTime: string;
    };

export interface LoginProvider extends ProviderInfo {
  start(intent: Intent): Promise<StartAnswer>;
  complete(input: Record<string, string | undefined>): Promise<{ identity: ExternalIdentity; intent: Intent }>;
}

const registries = new WeakMap<Kernel, Map<string, LoginProvider>>();

export const providerRegistry = (kernel: Kernel): Map<string, LoginProvider> => {
  let registry = registries.get(kernel);
  if (!registry) {
    registry = new Map();
    for (const config of kernel.config.OIDC_PROVIDERS ?? []) registry.set(config.id, oidcProvider(kernel, config));
    const siwe = siweProvider(kernel);
    registry.set(siwe.id, siwe);
    registries.set(kernel, registry);
  }
  return registry;
};

/** POST /auth/login/:providerId: where to send the browser, or what the wallet must sign */
export const startLogin = (kernel: Kernel, providerId: string): Promise<StartAnswer> =>
  providerById(kernel, providerId).start({ kind: 'login' });

export const providerById = (kernel: Kernel, id: string): LoginProvider => {
  const provider = providerRegistry(kernel).get(id);
  if (!provider) throw commonErrors.notFound('There is no login provider with this id.');
  return provider;
};

/**
 * Links a proven identity to an account in the unit of work (platform tenant): 409
 * provider-already-linked when another user holds it ((provider, externalId) is unique in
 * identity.provider_links), 409 conflict when this user has a link to the provider already.
 */
const linkIn = async (kernel: Kernel, p: UnitOfWork, userId: string, found: ExternalIdentity): Promise<string> => {
  const holder = await providerLinks.holderOf(p.tx, found.providerId, found.externalId);
  if (holder) throw holder === userId ? identityErrors.providerLinkedAlready() : identityErrors.providerAlreadyLinked();
  const linkId = kernel.ids.next();
  p.decide(Account, await p.load(Account, accountStream(userId)), {
    type: 'LinkProvider',
    linkId,
    providerId: found.providerId,
    providerType: found.providerType,
    externalId: found.externalId,
    email: found.email,
    displayName: found.displayName,
    linkedAt: kernel.clock.now().toISOString(),
  });
  if (
    !(await providerLinks.insert(p.tx, {
      id: linkId,
      userId,
      providerId: found.providerId,
      externalId: found.externalId,
    }))
  )
    throw identityErrors.providerAlreadyLinked();
  return linkId;
};

/** links a proven identity of the user to their account: the link as shown */
const linkProvider = async (
  kernel: Kernel,
  traceId: string,
  userId: string,
  found: ExternalIdentity,
): Promise<ProviderLinkView> =>
  kernel.commands.run(anonymousMeta(PLATFORM_TENANT_ID, traceId, userId), async (uow) => {
    const linkId = await linkIn(kernel, uow, userId, found);
    await uow.flush(kernel.projections);
    const link = (await linksOf(uow.tx, userId)).find((l) => l.id === linkId);
    if (!link) throw commonErrors.notFound('The link does not exist.');
    return link;
  });

/** what a link request answers: the link (proven at once: SIWE), or where to send the browser (OpenID Connect: linked at the callback) */
export type LinkAnswer =
  { kind: 'linked'; link: ProviderLinkView } | { kind: 'redirect'; redirectUrl: string; state: string };

/**
 * POST /users/:id/providers/:providerId. Linking proves an external identity of the caller:
 * nobody links one to someone else's account, nor an impersonator to the impersonated user's.
 */
export const requestLink = async (
  kernel: Kernel,
  traceId: string,
  principal: Principal,
  userId: string,
  providerId: string,
  signed: { message?: string; signature?: string },
): Promise<LinkAnswer> => {
  await assertMember(kernel, principal.tenantId, userId);
  if (principal.userId !== userId || principal.impersonatorId)
    throw commonErrors.forbidden('Only the user themself can link a provider.');
  const provider = providerById(kernel, providerId);
  if (provider.type === 'wallet')
    return {
      kind: 'linked',
      link: await linkProvider(kernel, traceId, principal.userId, await verifySiwe(kernel, signed)),
    };
  const started = await provider.start({ kind: 'link', userId: principal.userId, tenantId: principal.tenantId });
  if (!('redirectUrl' in started)) throw commonErrors.notFound('This provider cannot be linked by redirection.');
  return { kind: 'redirect', redirectUrl: started.redirectUrl, state: started.state };
};

/** DELETE /users/:id/providers/:providerId: the user themself or users.update; the account decider refuses the last way in (400 last-provider) */
export const unlinkProvider = async (
  kernel: Kernel,
  traceId: string,
  principal: Principal,
  userId: string,
  providerId: string,
): Promise<void> => {
  await assertMember(kernel, principal.tenantId, userId);
  if (principal.userId !== userId && !hasPermission(principal.permissions, 'users.update'))
    throw commonErrors.forbidden();
  await kernel.commands.run(anonymousMeta(PLATFORM_TENANT_ID, traceId, principal.userId), async (uow) => {
    uow.decide(Account, await uow.load(Account, accountStream(userId)), { type: 'UnlinkProvider', providerId });
    await providerLinks.delete(uow.tx, userId, providerId);
  });
};

/** what a callback answers: the link when the state was started by a link request, else the session */
export type CallbackAnswer =
  { kind: 'linked'; link: ProviderLinkView } | { kind: 'signed-in'; session: ReturnType<typeof camelAnswer> };

/**
 * GET or POST /auth/callback/:providerId. A link completes only with the bearer token of the user
 * who started it (`caller` verifies the request's token): a link URL sent to someone else cannot
 * attach their provider identity to the sender's account (tokens never travel in cookies).
 */
export const completeCallback = async (
  kernel: Kernel,
  traceId: string,
  providerId: string,
  input: Record<string, string | undefined>,
  caller: () => Promise<Principal | null>,
): Promise<CallbackAnswer> => {
  const { identity: found, intent } = await providerById(kernel, providerId).complete(input);
  if (intent.kind === 'link') {
    const principal = await caller();
    if (!principal || principal.userId !== intent.userId || principal.impersonatorId)
      throw commonErrors.unauthorized('Completing a link needs the access token of the user who started it.');
    return { kind: 'linked', link: await linkProvider(kernel, traceId, intent.userId, found) };
  }
  return { kind: 'signed-in', session: camelAnswer(await signInWith(kernel, traceId, found)) };
};

/** an address that cannot receive mail (RFC 2606 .invalid) for accounts whose provider gives none */
const placeholderEmail = (found: ExternalIdentity): string =>
  found.providerType === 'wallet'
    ? `${found.externalId.toLowerCase()}@wallet.invalid`
    : `${found.providerId}-${hashToken(found.externalId).slice(0, 24)}@oidc.invalid`;

/**
 * The account of a proven identity. A linked identity signs in to its account. An unknown one
 * whose email belongs to an account is linked to it only when both the provider and we have
 * verified that email and the account has no MFA (else 409: sign in and link from the account —
 * this stops pre-registration takeovers and MFA bypass). Otherwise a new account (no password)
 * with its own tenant and Owner role is created and linked, like a registration.
 */
const resolveUser = async (kernel: Kernel, traceId: string, found: ExternalIdentity): Promise<string> => {
  const linked = await providerLinks.holderOf(kernel.db, found.providerId, found.externalId);
  if (linked) return linked;
  try {
    const creds = found.email ? await credentials.byEmail(kernel.db, normalizeEmail(found.email)) : null;
    if (creds) {
      const account = await findAccount(kernel.db, creds.userId);
      if (!found.emailVerified || !account?.email_verified || account.mfa_enabled || account.status !== 'active') {
        throw commonErrors.conflict(
          'An account with this email exists: sign in to it and link this provider from there.',
        );
      }
      await kernel.commands.run(anonymousMeta(PLATFORM_TENANT_ID, traceId, creds.userId), (uow) =>
        linkIn(kernel, uow, creds.userId, found),
      );
      return creds.userId;
    }
    return await createExternalAccount(kernel, traceId, found);
  } catch (error) {
    // two first logins of one identity at once: the loser signs in to the winner's account
    const winner = await providerLinks.holderOf(kernel.db, found.providerId, found.externalId);
    if (winner) return winner;
    throw error;
  }
};

const createExternalAccount = async (kernel: Kernel, traceId: string, found: ExternalIdentity): Promise<string> => {
  const userId = kernel.ids.next();
  const tenantId = kernel.ids.next();
  const email = found.email || placeholderEmail(found);
  const firstName = found.firstName || (found.lastName ? '' : found.displayName);
  const tenantName = `${firstName || found.displayName}'s workspace`.slice(0, 100);
  await kernel.commands.run(anonymousMeta(tenantId, traceId, userId), async (uow) => {
    await claimEmail(kernel, uow.tx, userId, email, null);
    const p = platformUnit(kernel, uow);
    p.decide(Account, await p.load(Account, accountStream(userId)), {
      type: 'CreateAccount',
      userId,
      tenantId,
      email,
      firstName: firstName.slice(0, 100),
      lastName: found.lastName.slice(0, 100),
      emailVerified: found.email !== '' && found.emailVerified,
      hasPassword: false,
      via: `provider:${found.providerId}`,
    });
    await flushPlatform(kernel, uow, p); // the link below loads the account just created
    await linkIn(kernel, p, userId, found);
    await flushPlatform(kernel, uow, p);
    await createTenant(kernel, uow, {
      tenantId,
      name: tenantName,
      slug: `${slugify(tenantName)}-${tenantId.slice(-8)}`,
      ownerId: userId,
      roleName: OWNER_ROLE,
      permissions: ownerPermissions(kernel),
    });
  });
  return userId;
};

/** a provider login: the account, the locks, the MFA challenge, then tokens or the tenant choice */
const signInWith = async (kernel: Kernel, traceId: string, found: ExternalIdentity): Promise<SessionOutcome> => {
  const userId = await resolveUser(kernel, traceId, found);
  const account = await assertNotLocked(kernel, userId);
  if (account.mfa_enabled) {
    const { token } = await createOneTimeToken(kernel, kernel.db, {
      purpose: 'mfa',
      ttlMs: LIFETIMES.mfaTokenMs,
      userId,
      payload: { method: `provider:${found.providerId}` },
    });
    throw identityErrors.mfaRequired(token);
  }
  return openSession(kernel, traceId, userId, `provider:${found.providerId}`);
};
