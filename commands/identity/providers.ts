import { LIFETIMES, OWNER_ROLE, PLATFORM_TENANT_ID } from '../../domain/identity/constants';
import { identityErrors } from '../../domain/identity/errors';
import { commonErrors } from '../../domain/shared/errors';
import type { UnitOfWork } from '../../infra/eventstore/unit-of-work';
import type { Kernel } from '../../infra/kernel';
import type { Queryable } from '../../infra/postgres/db';
import { PgCode, pgErrorCode } from '../../infra/postgres/db';
import { hashToken } from '../../infra/security/one-time-tokens';
import { findAccount, providerLinks } from '../../projections/identity/queries';
import type { SessionOutcome } from './accounts';
import { assertNotLocked, claimEmail, createTenant, credentialsByEmail, openSession, slugify } from './accounts';
import { Account, accountStream, anonymousMeta, flushPlatform, platformUnit } from './aggregates';
import { oidcProvider } from './oidc';
import { siweProvider } from './siwe';
import { createOneTimeToken } from './tokens';
import { ownerPermissions } from './runtime';

/**
 * The registry of login providers. `password` is POST /auth/login itself; the others are
 * pluggable: each starts a login (POST /auth/login/:id) and completes it (the callback) with an
 * identity the provider proved. OpenID Connect providers come from OIDC_PROVIDERS; the wallet
 * provider (Sign-In with Ethereum) is always installed.
 */
export interface ProviderInfo { id: string; type: string; name: string }

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
  | { nonce: string; domain: string; uri: string; version: '1'; chainId: number; chainIds: number[]; statement: string; issuedAt: string; expirationTime: string };

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

export const providerList = (kernel: Kernel): ProviderInfo[] => [
  { id: 'password', type: 'password', name: 'Email and password' },
  ...[...providerRegistry(kernel).values()].map(({ id, type, name }) => ({ id, type, name })),
];

export const providerById = (kernel: Kernel, id: string): LoginProvider => {
  const provider = providerRegistry(kernel).get(id);
  if (!provider) throw commonErrors.notFound('There is no login provider with this id.');
  return provider;
};

const linkedUser = async (q: Queryable, found: ExternalIdentity): Promise<string | null> =>
  (await q.query<{ user_id: string }>('SELECT user_id FROM identity.provider_links WHERE provider_id = $1 AND external_id = $2', [found.providerId, found.externalId])).rows[0]?.user_id ?? null;

/**
 * Links a proven identity to an account in the unit of work (platform tenant): 409
 * provider-already-linked when another user holds it ((provider, externalId) is unique in
 * identity.provider_links), 409 conflict when this user has a link to the provider already.
 */
const linkIn = async (kernel: Kernel, p: UnitOfWork, userId: string, found: ExternalIdentity): Promise<string> => {
  const holder = await linkedUser(p.tx, found);
  if (holder) throw holder === userId ? identityErrors.providerLinkedAlready() : identityErrors.providerAlreadyLinked();
  const linkId = kernel.ids.next();
  p.decide(Account, await p.load(Account, accountStream(userId)), {
    type: 'LinkProvider', linkId, providerId: found.providerId, providerType: found.providerType, externalId: found.externalId,
    email: found.email, displayName: found.displayName, linkedAt: kernel.clock.now().toISOString(),
  });
  try {
    await p.tx.query('INSERT INTO identity.provider_links (id, user_id, provider_id, external_id) VALUES ($1, $2, $3, $4)', [linkId, userId, found.providerId, found.externalId]);
  } catch (error) {
    if (pgErrorCode(error) === PgCode.uniqueViolation) throw identityErrors.providerAlreadyLinked();
    throw error;
  }
  return linkId;
};

/** POST /users/:id/providers/:providerId and the link completion of the callback: 201 with the link */
export const linkProvider = async (kernel: Kernel, traceId: string, actorId: string, userId: string, found: ExternalIdentity) => {
  const linkId = await kernel.commands.run(anonymousMeta(PLATFORM_TENANT_ID, traceId, actorId), (uow) => linkIn(kernel, uow, userId, found));
  const link = (await providerLinks(kernel.db, userId)).find((l) => l.id === linkId);
  if (!link) throw commonErrors.notFound('The link does not exist.');
  return link;
};

/** DELETE /users/:id/providers/:providerId: the account decider refuses the last way in (400 last-provider) */
export const unlinkProvider = async (kernel: Kernel, traceId: string, actorId: string, userId: string, providerId: string): Promise<void> => {
  await kernel.commands.run(anonymousMeta(PLATFORM_TENANT_ID, traceId, actorId), async (uow) => {
    uow.decide(Account, await uow.load(Account, accountStream(userId)), { type: 'UnlinkProvider', providerId });
    await uow.tx.query('DELETE FROM identity.provider_links WHERE user_id = $1 AND provider_id = $2', [userId, providerId]);
  });
};

/** an address that cannot receive mail (RFC 2606 .invalid) for accounts whose provider gives none */
const placeholderEmail = (found: ExternalIdentity): string =>
  found.providerType === 'wallet' ? `${found.externalId.toLowerCase()}@wallet.invalid` : `${found.providerId}-${hashToken(found.externalId).slice(0, 24)}@oidc.invalid`;

/**
 * The account of a proven identity. A linked identity signs in to its account. An unknown one
 * whose email belongs to an account is linked to it only when both the provider and we have
 * verified that email and the account has no MFA (else 409: sign in and link from the account —
 * this stops pre-registration takeovers and MFA bypass). Otherwise a new account (no password)
 * with its own tenant and Owner role is created and linked, like a registration.
 */
const resolveUser = async (kernel: Kernel, traceId: string, found: ExternalIdentity): Promise<string> => {
  const linked = await linkedUser(kernel.db, found);
  if (linked) return linked;
  try {
    const creds = found.email ? await credentialsByEmail(kernel.db, found.email) : null;
    if (creds) {
      const account = await findAccount(kernel.db, creds.user_id);
      if (!found.emailVerified || !account?.email_verified || account.mfa_enabled || account.status !== 'active') {
        throw commonErrors.conflict('An account with this email exists: sign in to it and link this provider from there.');
      }
      await kernel.commands.run(anonymousMeta(PLATFORM_TENANT_ID, traceId, creds.user_id), (uow) => linkIn(kernel, uow, creds.user_id, found));
      return creds.user_id;
    }
    return await createExternalAccount(kernel, traceId, found);
  } catch (error) {
    // two first logins of one identity at once: the loser signs in to the winner's account
    const winner = await linkedUser(kernel.db, found);
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
    await claimEmail(uow.tx, userId, email, null);
    const p = platformUnit(kernel, uow);
    p.decide(Account, await p.load(Account, accountStream(userId)), {
      type: 'CreateAccount', userId, tenantId, email, firstName: firstName.slice(0, 100), lastName: found.lastName.slice(0, 100),
      emailVerified: found.email !== '' && found.emailVerified, hasPassword: false, via: `provider:${found.providerId}`,
    });
    await flushPlatform(kernel, uow, p); // the link below loads the account just created
    await linkIn(kernel, p, userId, found);
    await flushPlatform(kernel, uow, p);
    await createTenant(kernel, uow, {
      tenantId, name: tenantName, slug: `${slugify(tenantName)}-${tenantId.slice(-8)}`, ownerId: userId, roleName: OWNER_ROLE, permissions: ownerPermissions(kernel),
    });
  });
  return userId;
};

/** a provider login: the account, the locks, the MFA challenge, then tokens or the tenant choice */
export const signInWith = async (kernel: Kernel, traceId: string, found: ExternalIdentity): Promise<SessionOutcome> => {
  const userId = await resolveUser(kernel, traceId, found);
  const account = await assertNotLocked(kernel, userId);
  if (account.mfa_enabled) {
    const { token } = await createOneTimeToken(kernel, kernel.db, { purpose: 'mfa', ttlMs: LIFETIMES.mfaTokenMs, userId, payload: { method: `provider:${found.providerId}` } });
    throw identityErrors.mfaRequired(token);
  }
  return openSession(kernel, traceId, userId, `provider:${found.providerId}`);
};
