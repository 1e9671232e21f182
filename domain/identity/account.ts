import { z } from 'zod';
import type { Decider } from '../shared/decider';
import { assertNever } from '../shared/decider';
import { commonErrors } from '../shared/errors';
import { identityErrors } from './errors';

/**
 * An account: one person, across all the tenants they belong to (memberships are their own
 * aggregate). Lives in the platform pseudo-tenant. Secrets (password hash) are never in events:
 * events are published on platform.auth.events.
 */
const Created = z.object({
  type: z.literal('auth.user.created'),
  data: z.object({
    userId: z.string(),
    tenantId: z.string(),
    email: z.string(),
    firstName: z.string(),
    lastName: z.string(),
    emailVerified: z.boolean(),
    hasPassword: z.boolean(),
    via: z.string(),
  }),
});
const ProfileUpdated = z.object({
  type: z.literal('auth.user.profile_updated'),
  data: z.object({
    userId: z.string(),
    email: z.string(),
    firstName: z.string(),
    lastName: z.string(),
    avatarUrl: z.string(),
    emailVerified: z.boolean(),
  }),
});
const EmailVerified = z.object({
  type: z.literal('auth.user.email_verified'),
  data: z.object({ userId: z.string(), email: z.string() }),
});
/** an address change confirmed from the old address and verified on the new one: the new address is verified */
const EmailChanged = z.object({
  type: z.literal('auth.user.email_changed'),
  data: z.object({ userId: z.string(), email: z.string(), previousEmail: z.string() }),
});
const PasswordChanged = z.object({
  type: z.literal('auth.user.password_changed'),
  data: z.object({ userId: z.string(), reason: z.string() }),
});
const LoggedIn = z.object({
  type: z.literal('auth.user.logged_in'),
  data: z.object({ userId: z.string(), tenantId: z.string(), method: z.string() }),
});
const Locked = z.object({
  type: z.literal('auth.user.locked'),
  data: z.object({ userId: z.string(), reason: z.string() }),
});
const Unlocked = z.object({ type: z.literal('auth.user.unlocked'), data: z.object({ userId: z.string() }) });
const ProviderLinked = z.object({
  type: z.literal('auth.user.provider_linked'),
  data: z.object({
    userId: z.string(),
    linkId: z.string(),
    providerId: z.string(),
    providerType: z.string(),
    externalId: z.string(),
    email: z.string(),
    displayName: z.string(),
    linkedAt: z.string(),
  }),
});
const ProviderUnlinked = z.object({
  type: z.literal('auth.user.provider_unlinked'),
  data: z.object({ userId: z.string(), linkId: z.string(), providerId: z.string() }),
});

export const AccountEvent = z.discriminatedUnion('type', [
  Created,
  ProfileUpdated,
  EmailVerified,
  EmailChanged,
  PasswordChanged,
  LoggedIn,
  Locked,
  Unlocked,
  ProviderLinked,
  ProviderUnlinked,
]);
export type AccountEvent = z.infer<typeof AccountEvent>;

export interface ProviderLink {
  linkId: string;
  providerId: string;
}

export type Account =
  | { status: 'none' }
  | {
      status: 'active' | 'locked';
      userId: string;
      /** the tenant the account was created through (registration, invitation, provider sign-up, platform CLI) */
      homeTenantId: string;
      email: string;
      firstName: string;
      lastName: string;
      avatarUrl: string;
      emailVerified: boolean;
      hasPassword: boolean;
      providers: ProviderLink[];
    };

export type AccountCommand =
  | {
      type: 'CreateAccount';
      userId: string;
      tenantId: string;
      email: string;
      firstName: string;
      lastName: string;
      emailVerified: boolean;
      hasPassword: boolean;
      via: string;
    }
  | { type: 'UpdateProfile'; firstName?: string; lastName?: string; avatarUrl?: string }
  | { type: 'VerifyEmail'; email: string }
  | { type: 'ChangeEmail'; email: string }
  | { type: 'ChangePassword'; reason: string }
  | { type: 'RecordLogin'; tenantId: string; method: string }
  | { type: 'LockAccount'; reason: string }
  | { type: 'UnlockAccount' }
  | {
      type: 'LinkProvider';
      linkId: string;
      providerId: string;
      providerType: string;
      externalId: string;
      email: string;
      displayName: string;
      linkedAt: string;
    }
  | { type: 'UnlinkProvider'; providerId: string };

type Existing = Exclude<Account, { status: 'none' }>;

const existing = (s: Account): Existing => {
  if (s.status === 'none') throw commonErrors.notFound('The user does not exist.');
  return s;
};

export const accountDecider: Decider<Account, AccountCommand, AccountEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve: (s, e) => {
    switch (e.type) {
      case 'auth.user.created':
        return {
          status: 'active',
          userId: e.data.userId,
          homeTenantId: e.data.tenantId,
          email: e.data.email,
          firstName: e.data.firstName,
          lastName: e.data.lastName,
          avatarUrl: '',
          emailVerified: e.data.emailVerified,
          hasPassword: e.data.hasPassword,
          providers: [],
        };
      case 'auth.user.profile_updated':
        return s.status === 'none'
          ? s
          : {
              ...s,
              email: e.data.email,
              firstName: e.data.firstName,
              lastName: e.data.lastName,
              avatarUrl: e.data.avatarUrl,
              emailVerified: e.data.emailVerified,
            };
      case 'auth.user.email_verified':
        return s.status === 'none' ? s : { ...s, emailVerified: true };
      case 'auth.user.email_changed':
        return s.status === 'none' ? s : { ...s, email: e.data.email, emailVerified: true };
      case 'auth.user.password_changed':
        return s.status === 'none' ? s : { ...s, hasPassword: true };
      case 'auth.user.logged_in':
        return s;
      case 'auth.user.locked':
        return s.status === 'none' ? s : { ...s, status: 'locked' };
      case 'auth.user.unlocked':
        return s.status === 'none' ? s : { ...s, status: 'active' };
      case 'auth.user.provider_linked':
        return s.status === 'none'
          ? s
          : { ...s, providers: [...s.providers, { linkId: e.data.linkId, providerId: e.data.providerId }] };
      case 'auth.user.provider_unlinked':
        return s.status === 'none'
          ? s
          : { ...s, providers: s.providers.filter((p) => p.providerId !== e.data.providerId) };
      default:
        return assertNever(e);
    }
  },
  decide: (c, s) => {
    switch (c.type) {
      case 'CreateAccount':
        if (s.status !== 'none') throw identityErrors.emailTaken();
        return [
          {
            type: 'auth.user.created',
            data: {
              userId: c.userId,
              tenantId: c.tenantId,
              email: c.email,
              firstName: c.firstName,
              lastName: c.lastName,
              emailVerified: c.emailVerified,
              hasPassword: c.hasPassword,
              via: c.via,
            },
          },
        ];
      case 'UpdateProfile':
        return updateProfile(c, existing(s));
      case 'VerifyEmail': {
        const a = existing(s);
        return a.emailVerified || a.email !== c.email
          ? []
          : [{ type: 'auth.user.email_verified', data: { userId: a.userId, email: a.email } }];
      }
      case 'ChangeEmail': {
        const a = existing(s);
        return a.email === c.email
          ? []
          : [{ type: 'auth.user.email_changed', data: { userId: a.userId, email: c.email, previousEmail: a.email } }];
      }
      case 'ChangePassword':
        return [{ type: 'auth.user.password_changed', data: { userId: existing(s).userId, reason: c.reason } }];
      case 'RecordLogin': {
        const a = existing(s);
        if (a.status === 'locked') throw identityErrors.accountLocked();
        return [{ type: 'auth.user.logged_in', data: { userId: a.userId, tenantId: c.tenantId, method: c.method } }];
      }
      case 'LockAccount': {
        const a = existing(s);
        return a.status === 'locked'
          ? []
          : [{ type: 'auth.user.locked', data: { userId: a.userId, reason: c.reason } }];
      }
      case 'UnlockAccount': {
        const a = existing(s);
        return a.status === 'active' ? [] : [{ type: 'auth.user.unlocked', data: { userId: a.userId } }];
      }
      case 'LinkProvider': {
        const a = existing(s);
        if (a.providers.some((p) => p.providerId === c.providerId)) throw identityErrors.providerLinkedAlready();
        const { type: _t, ...data } = c;
        return [{ type: 'auth.user.provider_linked', data: { userId: a.userId, ...data } }];
      }
      case 'UnlinkProvider':
        return unlink(c, existing(s));
      default:
        return assertNever(c);
    }
  },
};

/** names and avatar; the address changes only through ChangeEmail, after both addresses confirmed */
const updateProfile = (c: Extract<AccountCommand, { type: 'UpdateProfile' }>, a: Existing): AccountEvent[] => {
  const next = {
    firstName: c.firstName ?? a.firstName,
    lastName: c.lastName ?? a.lastName,
    avatarUrl: c.avatarUrl ?? a.avatarUrl,
  };
  if (next.firstName === a.firstName && next.lastName === a.lastName && next.avatarUrl === a.avatarUrl) return [];
  return [
    {
      type: 'auth.user.profile_updated',
      data: { userId: a.userId, email: a.email, ...next, emailVerified: a.emailVerified },
    },
  ];
};

/** the last way to sign in (no password and one link) cannot be removed */
const unlink = (c: Extract<AccountCommand, { type: 'UnlinkProvider' }>, a: Existing): AccountEvent[] => {
  const link = a.providers.find((p) => p.providerId === c.providerId);
  if (!link) throw commonErrors.notFound('The user has no link to this provider.');
  if (!a.hasPassword && a.providers.length === 1) throw identityErrors.lastProvider();
  return [
    { type: 'auth.user.provider_unlinked', data: { userId: a.userId, linkId: link.linkId, providerId: c.providerId } },
  ];
};
