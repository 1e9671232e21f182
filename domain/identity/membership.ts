import { z } from 'zod';
import type { Decider } from '../shared/decider';
import { assertNever } from '../shared/decider';
import { commonErrors } from '../shared/errors';
import { LIMITS } from './constants';
import { identityErrors } from './errors';

/**
 * A user's membership of one tenant: the roles held there and the tenant-side status (soft delete
 * and restore happen here, so deleting a user in one tenant leaves their other tenants alone).
 */
const data = <D extends z.ZodRawShape>(shape: D) => z.object({ userId: z.string(), tenantId: z.string(), ...shape });
export const MembershipEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('auth.member.added'), data: data({ roleIds: z.array(z.string()), via: z.string() }) }),
  z.object({
    type: z.literal('auth.role.changed'),
    data: data({
      roleId: z.string(),
      roleName: z.string(),
      change: z.enum(['assigned', 'revoked']),
      roleIds: z.array(z.string()),
    }),
  }),
  z.object({ type: z.literal('auth.member.deleted'), data: data({ deletedAt: z.string() }) }),
  z.object({ type: z.literal('auth.member.restored'), data: data({ status: z.enum(['active', 'locked']) }) }),
  z.object({ type: z.literal('auth.member.status_changed'), data: data({ status: z.enum(['active', 'locked']) }) }),
]);
export type MembershipEvent = z.infer<typeof MembershipEvent>;

export type MemberStatus = 'active' | 'locked' | 'pending_deletion';
export type Membership =
  | { status: 'none' }
  | {
      status: MemberStatus;
      userId: string;
      tenantId: string;
      roleIds: string[];
      deletedAt: string | null;
      statusBeforeDelete: 'active' | 'locked';
    };

export type MembershipCommand =
  | { type: 'AddMember'; userId: string; tenantId: string; roleIds: string[]; via: string }
  | { type: 'AssignRole'; roleId: string; roleName: string }
  | { type: 'RevokeRole'; roleId: string; roleName: string }
  | { type: 'DeleteMember'; at: string }
  | { type: 'RestoreMember' }
  | { type: 'SetMemberStatus'; status: 'active' | 'locked' };

type Existing = Exclude<Membership, { status: 'none' }>;
const member = (s: Membership): Existing => {
  if (s.status === 'none') throw commonErrors.notFound('The user does not exist.');
  return s;
};

export const membershipDecider: Decider<Membership, MembershipCommand, MembershipEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve: (s, e) => {
    switch (e.type) {
      case 'auth.member.added':
        return {
          status: 'active',
          userId: e.data.userId,
          tenantId: e.data.tenantId,
          roleIds: e.data.roleIds,
          deletedAt: null,
          statusBeforeDelete: 'active',
        };
      case 'auth.role.changed':
        return s.status === 'none' ? s : { ...s, roleIds: e.data.roleIds };
      case 'auth.member.deleted':
        return s.status === 'none'
          ? s
          : {
              ...s,
              status: 'pending_deletion',
              deletedAt: e.data.deletedAt,
              statusBeforeDelete: s.status === 'locked' ? 'locked' : 'active',
            };
      case 'auth.member.restored':
        return s.status === 'none' ? s : { ...s, status: e.data.status, deletedAt: null };
      case 'auth.member.status_changed':
        return s.status === 'none' ? s : { ...s, status: e.data.status };
      default:
        return assertNever(e);
    }
  },
  decide: (c, s) => {
    switch (c.type) {
      case 'AddMember':
        if (s.status !== 'none') throw identityErrors.memberExists();
        if (c.roleIds.length > LIMITS.rolesPerUser)
          throw identityErrors.rbacLimit('roles per user', LIMITS.rolesPerUser);
        return [
          {
            type: 'auth.member.added',
            data: { userId: c.userId, tenantId: c.tenantId, roleIds: [...new Set(c.roleIds)], via: c.via },
          },
        ];
      case 'AssignRole': {
        const m = member(s);
        if (m.roleIds.includes(c.roleId)) return [];
        if (m.roleIds.length >= LIMITS.rolesPerUser)
          throw identityErrors.rbacLimit('roles per user', LIMITS.rolesPerUser);
        return [
          {
            type: 'auth.role.changed',
            data: {
              userId: m.userId,
              tenantId: m.tenantId,
              roleId: c.roleId,
              roleName: c.roleName,
              change: 'assigned',
              roleIds: [...m.roleIds, c.roleId],
            },
          },
        ];
      }
      case 'RevokeRole': {
        const m = member(s);
        if (!m.roleIds.includes(c.roleId)) return [];
        return [
          {
            type: 'auth.role.changed',
            data: {
              userId: m.userId,
              tenantId: m.tenantId,
              roleId: c.roleId,
              roleName: c.roleName,
              change: 'revoked',
              roleIds: m.roleIds.filter((r) => r !== c.roleId),
            },
          },
        ];
      }
      case 'DeleteMember': {
        const m = member(s);
        return m.status === 'pending_deletion'
          ? []
          : [{ type: 'auth.member.deleted', data: { userId: m.userId, tenantId: m.tenantId, deletedAt: c.at } }];
      }
      case 'RestoreMember': {
        const m = member(s);
        return m.status !== 'pending_deletion'
          ? []
          : [
              {
                type: 'auth.member.restored',
                data: { userId: m.userId, tenantId: m.tenantId, status: m.statusBeforeDelete },
              },
            ];
      }
      case 'SetMemberStatus': {
        const m = member(s);
        if (m.status === 'pending_deletion') throw commonErrors.conflict('The user is deleted; restore it first.');
        return m.status === c.status
          ? []
          : [
              {
                type: 'auth.member.status_changed',
                data: { userId: m.userId, tenantId: m.tenantId, status: c.status },
              },
            ];
      }
      default:
        return assertNever(c);
    }
  },
};
