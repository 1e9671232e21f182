import { z } from 'zod';
import type { Decider } from '../shared/decider';
import { assertNever } from '../shared/decider';
import { commonErrors } from '../shared/errors';
import { LIMITS } from './constants';
import { identityErrors } from './errors';

/** A role of a tenant: a named set of permission keys. Built-in roles (Owner) cannot be deleted or changed. */
const RoleData = z.object({
  roleId: z.string(),
  tenantId: z.string(),
  name: z.string(),
  description: z.string(),
  permissions: z.array(z.string()),
});
export const RoleEvent = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('auth.role.created'),
    data: RoleData.extend({ builtIn: z.boolean(), createdBy: z.string() }),
  }),
  z.object({ type: z.literal('auth.role.updated'), data: RoleData }),
  z.object({
    type: z.literal('auth.role.deleted'),
    data: z.object({ roleId: z.string(), tenantId: z.string(), name: z.string() }),
  }),
]);
export type RoleEvent = z.infer<typeof RoleEvent>;

export type Role =
  | { status: 'none' | 'deleted' }
  | {
      status: 'active';
      roleId: string;
      tenantId: string;
      name: string;
      description: string;
      permissions: string[];
      builtIn: boolean;
    };

export type RoleCommand =
  | {
      type: 'CreateRole';
      roleId: string;
      tenantId: string;
      name: string;
      description: string;
      permissions: string[];
      builtIn: boolean;
      createdBy: string;
    }
  | { type: 'UpdateRole'; name?: string; description?: string; permissions?: string[] }
  | { type: 'DeleteRole' };

const active = (s: Role): Extract<Role, { status: 'active' }> => {
  if (s.status !== 'active') throw commonErrors.notFound('The role does not exist.');
  return s;
};
const checkPermissionCount = (permissions: string[]) => {
  if (new Set(permissions).size > LIMITS.permissionsPerRole)
    throw identityErrors.rbacLimit('permissions per role', LIMITS.permissionsPerRole);
};

export const roleDecider: Decider<Role, RoleCommand, RoleEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve: (s, e) => {
    switch (e.type) {
      case 'auth.role.created':
        return {
          status: 'active',
          roleId: e.data.roleId,
          tenantId: e.data.tenantId,
          name: e.data.name,
          description: e.data.description,
          permissions: e.data.permissions,
          builtIn: e.data.builtIn,
        };
      case 'auth.role.updated':
        return s.status === 'active'
          ? { ...s, name: e.data.name, description: e.data.description, permissions: e.data.permissions }
          : s;
      case 'auth.role.deleted':
        return { status: 'deleted' };
      default:
        return assertNever(e);
    }
  },
  decide: (c, s) => {
    switch (c.type) {
      case 'CreateRole': {
        if (s.status !== 'none') throw commonErrors.conflict('The role exists already.');
        checkPermissionCount(c.permissions);
        const { type: _t, ...data } = c;
        return [{ type: 'auth.role.created', data: { ...data, permissions: [...new Set(c.permissions)].sort() } }];
      }
      case 'UpdateRole': {
        const r = active(s);
        if (r.builtIn) throw identityErrors.builtInRole();
        const permissions = c.permissions ? [...new Set(c.permissions)].sort() : r.permissions;
        checkPermissionCount(permissions);
        return [
          {
            type: 'auth.role.updated',
            data: {
              roleId: r.roleId,
              tenantId: r.tenantId,
              name: c.name ?? r.name,
              description: c.description ?? r.description,
              permissions,
            },
          },
        ];
      }
      case 'DeleteRole': {
        const r = active(s);
        if (r.builtIn) throw identityErrors.builtInRole();
        return [{ type: 'auth.role.deleted', data: { roleId: r.roleId, tenantId: r.tenantId, name: r.name } }];
      }
      default:
        return assertNever(c);
    }
  },
};
