import { z } from 'zod';
import type { Decider } from '../shared/decider';
import { assertNever } from '../shared/decider';
import { commonErrors } from '../shared/errors';

/** A tenant: created by registration (or the platform-owner command); it records impersonations as audit events. */
export const TenantEvent = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('auth.tenant.created'),
    data: z.object({
      tenantId: z.string(),
      name: z.string(),
      slug: z.string(),
      ownerId: z.string(),
      ownerRoleId: z.string(),
    }),
  }),
  z.object({
    type: z.literal('auth.impersonation.started'),
    data: z.object({
      tenantId: z.string(),
      impersonatorId: z.string(),
      userId: z.string(),
      reason: z.string(),
      note: z.string(),
      expiresAt: z.string(),
    }),
  }),
]);
export type TenantEvent = z.infer<typeof TenantEvent>;

export type Tenant =
  { status: 'none' } | { status: 'active'; name: string; slug: string; ownerId: string; ownerRoleId: string };

export type TenantCommand =
  | { type: 'CreateTenant'; tenantId: string; name: string; slug: string; ownerId: string; ownerRoleId: string }
  | {
      type: 'StartImpersonation';
      tenantId: string;
      impersonatorId: string;
      userId: string;
      reason: string;
      note: string;
      expiresAt: string;
    };

export const tenantDecider: Decider<Tenant, TenantCommand, TenantEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve: (s, e) => {
    switch (e.type) {
      case 'auth.tenant.created':
        return {
          status: 'active',
          name: e.data.name,
          slug: e.data.slug,
          ownerId: e.data.ownerId,
          ownerRoleId: e.data.ownerRoleId,
        };
      case 'auth.impersonation.started':
        return s;
      default:
        return assertNever(e);
    }
  },
  decide: (c, s) => {
    switch (c.type) {
      case 'CreateTenant':
        if (s.status !== 'none') throw commonErrors.conflict('The tenant exists already.');
        return [
          {
            type: 'auth.tenant.created',
            data: { tenantId: c.tenantId, name: c.name, slug: c.slug, ownerId: c.ownerId, ownerRoleId: c.ownerRoleId },
          },
        ];
      case 'StartImpersonation': {
        if (s.status === 'none') throw commonErrors.notFound('The tenant does not exist.');
        const { type: _t, ...data } = c;
        return [{ type: 'auth.impersonation.started', data }];
      }
      default:
        return assertNever(c);
    }
  },
};
