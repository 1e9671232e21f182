import { z } from 'zod';
import { authorityOf } from '../../domain/identity/authority';
import {
  Email,
  IdParam,
  InviteAnswer,
  Name,
  NewPassword,
  RoleIds,
  RoleNames,
  SnakePair,
  Token,
  UserView,
} from '../../domain/identity/views';
import { callerOf } from '../../infra/http/auth';
import { executeCommand } from '../../infra/http/commands';
import { acceptInvite, deleteUser, invite, restoreUser, updateUser } from '../../commands/identity/membership';
import type { IdentityRoutes } from './http';
import { noBody, perm, pub, tenantData, typed } from './http';

/**
 * Members of the caller's tenant (spec 000, Users): adding a person is an invitation its holder
 * accepts (docs/decisions.md, Identity security); the tenant changes, deletes and restores its
 * memberships.
 */
const InviteBody = z
  .object({ email: Email, role_id: z.string().max(64).optional(), roles: RoleNames.optional() })
  .meta({
    anyOf: [{ required: ['role_id'] }, { required: ['roles'], properties: { roles: { minItems: 1 } } }],
    description: 'role_id or a non-empty roles is required',
  });
const NewUserBody = z.object({
  email: Email,
  firstName: Name.optional(),
  lastName: Name.optional(),
  password: z
    .undefined({
      error: 'an administrator does not set passwords: the person chooses one when accepting the invitation',
    })
    .optional(),
  roles: RoleNames.optional(),
  role_ids: RoleIds.optional(),
});
/** an active member of the tenant gets no body (and a notice by mail); anyone else the invitation */
const Invited = InviteAnswer.optional().describe(
  'the invitation; no body when the address is an active member already',
);
const AcceptBody = z.object({ token: Token, name: z.string().trim().min(1).max(200), password: NewPassword });
const UserChanges = z.object({
  firstName: Name.optional(),
  lastName: Name.optional(),
  email: Email.optional(),
  avatarUrl: z.string().max(2048).optional(),
  status: z.enum(['active', 'locked']).optional(),
});

export const membershipRoutes: IdentityRoutes = (app, kernel) => {
  const r = typed(app);

  // 404: a role_id of no role of the tenant; 403 insufficient-role: a role beyond the inviter's own
  r.post(
    '/auth/invite',
    {
      config: { ...perm('users.create'), ...tenantData, problems: [404] },
      schema: { body: InviteBody, response: { 202: Invited } },
    },
    async (request, reply) => {
      const made = await invite(kernel, authorityOf(callerOf(request)), callerOf(request).tenantId, request.body, {
        roleRequired: true,
      });
      return made ? reply.code(202).send(made) : noBody(reply, 202);
    },
  );

  r.post(
    '/users',
    {
      config: { ...perm('users.create'), ...tenantData, problems: [404] },
      schema: { body: NewUserBody, response: { 202: Invited } },
    },
    async (request, reply) => {
      const made = await invite(kernel, authorityOf(callerOf(request)), callerOf(request).tenantId, request.body, {
        roleRequired: false,
      });
      return made ? reply.code(202).send(made) : noBody(reply, 202);
    },
  );

  // 401: the invitation is unknown, used or expired, or the password of an existing account is wrong; 409: a member already
  r.post(
    '/auth/accept-invite',
    { config: { ...pub, problems: [401, 409] }, schema: { body: AcceptBody, response: { 201: SnakePair } } },
    async (request, reply) => reply.code(201).send(await acceptInvite(kernel, request.id, request.body)),
  );

  // the holder edits their own names, avatar and address without users.update (the edge lets them through: orSelf); 409 last-owner
  r.patch(
    '/users/:id',
    {
      config: { ...perm('users.update'), ...tenantData, orSelf: 'id', idempotency: 'optional', problems: [409] },
      schema: { params: IdParam, body: UserChanges, response: { 200: UserView } },
    },
    (request, reply) =>
      executeCommand(kernel, request, reply, { idempotency: 'optional' }, (uow) =>
        updateUser(kernel, uow, authorityOf(callerOf(request)), request.params.id, request.body),
      ),
  );

  r.delete(
    '/users/:id',
    {
      config: { ...perm('users.delete'), ...tenantData, idempotency: 'optional', problems: [409] },
      schema: { params: IdParam, response: { 200: UserView } },
    },
    (request, reply) =>
      executeCommand(kernel, request, reply, { idempotency: 'optional' }, (uow) =>
        deleteUser(kernel, uow, request.params.id),
      ),
  );

  r.patch(
    '/users/:id/restore',
    {
      config: { ...perm('users.update'), ...tenantData, idempotency: 'optional' },
      schema: { params: IdParam, response: { 200: UserView } },
    },
    (request, reply) =>
      executeCommand(kernel, request, reply, { idempotency: 'optional' }, (uow) =>
        restoreUser(kernel, uow, request.params.id),
      ),
  );
};
