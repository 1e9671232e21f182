import type { FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { IDENTITY_PERMISSIONS } from '../../domain/identity/constants';
import { commonErrors } from '../../domain/shared/errors';
import { bearerToken } from '../../infra/http/auth';
import { executeCommand } from '../../infra/http/commands';
import type { Kernel } from '../../infra/kernel';
import { defineRoutes } from '../../infra/modules';
import { findUser, toRole, toUser, type RoleRow, type UserRow } from '../../projections/identity/queries';
import type { SessionOutcome } from '../../commands/identity/accounts';
import { completeMfaLogin, login, recoveryLogin, register, selectTenant, switchTenant } from '../../commands/identity/accounts';
import { confirmEmailChange } from '../../commands/identity/email-change';
import { acceptInvite, invite, requestReset, requestVerifyEmail, resetPassword, verifyEmail } from '../../commands/identity/flows';
import { confirmMfa, disableMfa, enableMfa, proveBothFactors, regenerateRecoveryCodes } from '../../commands/identity/mfa';
import { startIdentity } from '../../commands/identity/runtime';
import { camelPair, refreshTokens, revokeRefreshToken, snakePair } from '../../commands/identity/tokens';
import { changeRole, createRole, deleteRole, deleteUser, impersonate, restoreUser, updateRole, updateUser } from '../../commands/identity/users';
import { authorityOf } from '../../domain/identity/authority';
import { registerProviderWrites } from './providers';
import { CamelPair, Email, IdParam, Password, Role, RoleNames, SnakePair, TenantSelection, User } from './schemas';

const user = (row: UserRow | null) => {
  if (!row) throw commonErrors.notFound('The user does not exist.');
  return toUser(row);
};
const roleOf = (kernel: Kernel) => (row: RoleRow | null) => {
  if (!row) throw commonErrors.notFound('The role does not exist.');
  return toRole(row, kernel.permissions.list().map((p) => p.key));
};

const camelOutcome = (o: SessionOutcome) => (o.kind === 'tokens' ? camelPair(o.tokens) : { requiresTenantSelection: true as const, sessionToken: o.sessionToken, tenants: o.tenants });
const noBody = (reply: FastifyReply, status: number) => reply.code(status).send();

export default defineRoutes({
  namespace: 'iam',
  permissions: IDENTITY_PERMISSIONS,
  start: async (kernel: Kernel) => { await startIdentity(kernel); },
  register(app, kernel) {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const pub = { access: 'public' } as const;
    const bearer = { access: 'bearer' } as const;
    const perm = (permission: string) => ({ access: 'permission', permission } as const);
    const role = roleOf(kernel);
    const InviteAnswer = z.object({ invite_id: z.string(), email: z.string(), expires_at: z.string() });

    // --- authentication
    r.post('/auth/register', {
      config: pub,
      schema: {
        body: z.object({ email: Email, password: Password, firstName: z.string().max(100).optional(), lastName: z.string().max(100).optional(), tenantName: z.string().min(1).max(100).optional(), tenantSlug: z.string().regex(/^[a-z0-9][a-z0-9-]{1,62}$/).optional() }),
        response: { 201: CamelPair.extend({ user: User, tenant: z.object({ id: z.string(), name: z.string(), slug: z.string() }) }) },
      },
    }, async (request, reply) => {
      const { tokens, tenant } = await register(kernel, request.id, request.body);
      return reply.code(201).send({ ...camelPair(tokens), user: user(await findUser(kernel.db, tenant.id, tokens.access.userId)), tenant });
    });
    r.post('/auth/login', {
      config: pub,
      schema: { body: z.object({ email: z.string().max(254), password: Password, mfaCode: z.string().max(16).optional() }), response: { 200: z.union([CamelPair, TenantSelection]) } },
    }, async (request) => camelOutcome(await login(kernel, request.id, request.body)));
    r.post('/auth/refresh', { config: pub, schema: { body: z.object({ refreshToken: z.string().max(128) }), response: { 200: CamelPair } } },
      async (request) => refreshTokens(kernel, request.body.refreshToken));
    r.post('/auth/logout', { config: bearer, schema: { body: z.object({ refreshToken: z.string().max(128) }) } }, async (request, reply) => {
      await revokeRefreshToken(kernel, request.principal!.userId, request.body.refreshToken);
      return noBody(reply, 204);
    });
    r.post('/auth/impersonate', {
      config: perm('users.impersonate'),
      schema: { body: z.object({ tenantId: z.string().min(1).max(64), reason: z.string().trim().min(1).max(500), note: z.string().max(2000).optional(), userId: z.string().max(64).optional() }), response: { 200: CamelPair } },
    }, async (request) => camelPair(await impersonate(kernel, request.principal!, request.id, request.body)));
    r.post('/auth/select-tenant', {
      config: pub,
      schema: { body: z.object({ sessionToken: z.string().max(128), tenantId: z.string().min(1).max(64), rememberChoice: z.boolean().optional() }), response: { 200: CamelPair } },
    }, async (request) => camelPair(await selectTenant(kernel, request.id, request.body)));
    r.post('/auth/switch-tenant', { config: bearer, schema: { body: z.object({ tenantId: z.string().min(1).max(64) }), response: { 200: CamelPair } } },
      async (request) => camelPair(await switchTenant(kernel, request.principal!.userId, request.body.tenantId, request.principal!.impersonatorId)));

    // --- MFA
    r.post('/auth/mfa/enable', {
      config: bearer,
      schema: { response: { 200: z.object({ secret: z.string(), otpauth_uri: z.string(), qr_code_svg: z.string(), recovery_codes: z.array(z.string()) }) } },
    }, (request, reply) => executeCommand(kernel, request, reply, {}, (uow) => enableMfa(kernel, uow, request.principal!.userId, request.principal!.email)));
    // one path, two uses (spec 000): with a bearer token it confirms the setup; with mfa_token it completes a login
    r.post('/auth/mfa/verify', {
      config: pub,
      schema: {
        body: z.object({ code: z.string().max(16), mfa_token: z.string().max(128).optional() }),
        response: { 200: z.union([z.object({ mfa_enabled: z.literal(true), recovery_codes_remaining: z.number().int() }), SnakePair, TenantSelection]) },
      },
    }, async (request, reply) => {
      if (request.body.mfa_token !== undefined) {
        const outcome = await completeMfaLogin(kernel, request.id, request.body.mfa_token, request.body.code);
        return outcome.kind === 'tokens' ? snakePair(kernel, kernel.db, outcome.tokens) : { requiresTenantSelection: true as const, sessionToken: outcome.sessionToken, tenants: outcome.tenants };
      }
      const token = bearerToken(request.headers.authorization);
      if (!token) throw commonErrors.unauthorized();
      request.principal = await kernel.authenticator.authenticate(token);
      return executeCommand(kernel, request, reply, {}, (uow) => confirmMfa(kernel, uow, request.principal!.userId, request.body.code));
    });
    r.post('/auth/mfa/disable', {
      config: bearer, schema: { body: z.object({ code: z.string().max(16), password: Password }), response: { 200: z.object({ mfa_enabled: z.literal(false) }) } },
    }, async (request, reply) => {
      await proveBothFactors(kernel, request.principal!.userId, request.body);
      return executeCommand(kernel, request, reply, {}, (uow) => disableMfa(kernel, uow, request.principal!.userId));
    });
    r.post('/auth/recovery', {
      config: pub, schema: { body: z.object({ email: z.string().max(254), recovery_code: z.string().max(32) }), response: { 200: z.union([CamelPair, TenantSelection]) } },
    }, async (request) => camelOutcome(await recoveryLogin(kernel, request.id, request.ip, { email: request.body.email, recoveryCode: request.body.recovery_code })));
    r.post('/auth/recovery-codes/regenerate', {
      config: bearer, schema: { body: z.object({ password: Password, code: z.string().max(16) }), response: { 200: z.object({ recovery_codes: z.array(z.string()) }) } },
    }, async (request, reply) => {
      await proveBothFactors(kernel, request.principal!.userId, request.body);
      return executeCommand(kernel, request, reply, {}, (uow) => regenerateRecoveryCodes(kernel, uow, request.principal!.userId));
    });

    // --- security flows
    r.post('/auth/request-verify-email', { config: bearer }, async (request, reply) => {
      await requestVerifyEmail(kernel, request.principal!.userId);
      return noBody(reply, 202);
    });
    r.post('/auth/verify-email', { config: pub, schema: { body: z.object({ token: z.string().max(128) }), response: { 200: z.object({ email_verified: z.literal(true) }) } } },
      async (request) => verifyEmail(kernel, request.id, request.body.token));
    r.post('/auth/request-reset', { config: pub, schema: { body: z.object({ email: z.string().max(254) }) } }, async (request, reply) => {
      requestReset(kernel, request.body.email);
      return noBody(reply, 202);
    });
    r.post('/auth/reset-password', { config: pub, schema: { body: z.object({ token: z.string().max(128), password: Password }), response: { 200: z.object({ message: z.string() }) } } },
      async (request) => resetPassword(kernel, request.id, request.body));
    r.post('/auth/invite', {
      config: perm('users.create'),
      schema: { body: z.object({ email: Email, role_id: z.string().max(64).optional(), roles: RoleNames.optional() }), response: { 202: InviteAnswer.optional() } },
    }, async (request, reply) => {
      const made = await invite(kernel, authorityOf(request.principal!), request.principal!.tenantId, request.body, { roleRequired: true });
      return made ? reply.code(202).send(made) : noBody(reply, 202);
    });
    r.post('/auth/confirm-email-change', {
      config: pub,
      schema: {
        body: z.object({ token: z.string().max(128) }),
        response: { 200: z.union([z.object({ email_change: z.literal('completed'), email: z.string() }), z.object({ email_change: z.literal('pending'), confirmed: z.enum(['old', 'new']) })]) },
      },
    }, async (request) => confirmEmailChange(kernel, request.id, request.body.token));
    r.post('/auth/accept-invite', {
      config: pub, schema: { body: z.object({ token: z.string().max(128), name: z.string().trim().min(1).max(200), password: Password }), response: { 201: SnakePair } },
    }, async (request, reply) => reply.code(201).send(await snakePair(kernel, kernel.db, await acceptInvite(kernel, request.id, request.body))));

    // --- users: adding a person is an invitation its holder accepts (docs/decisions.md, Identity security)
    r.post('/users', {
      config: perm('users.create'),
      schema: {
        body: z.object({
          email: Email, firstName: z.string().max(100).optional(), lastName: z.string().max(100).optional(),
          password: z.undefined({ error: 'an administrator does not set passwords: the person chooses one when accepting the invitation' }).optional(),
          roles: RoleNames.optional(), role_ids: z.array(z.string().max(64)).max(1000).optional(),
        }),
        response: { 202: InviteAnswer.optional() },
      },
    }, async (request, reply) => {
      const made = await invite(kernel, authorityOf(request.principal!), request.principal!.tenantId, request.body, { roleRequired: false });
      return made ? reply.code(202).send(made) : noBody(reply, 202);
    });
    // the holder edits their own names, avatar and address without users.update (the edge lets them through: orSelf)
    r.patch('/users/:id', {
      config: { ...perm('users.update'), orSelf: 'id' },
      schema: {
        params: IdParam,
        body: z.object({ firstName: z.string().max(100).optional(), lastName: z.string().max(100).optional(), email: Email.optional(), avatarUrl: z.string().max(2048).optional(), status: z.enum(['active', 'locked']).optional() }),
        response: { 200: User },
      },
    }, (request, reply) => executeCommand(kernel, request, reply, { idempotency: 'optional' }, async (uow) => user(await updateUser(kernel, uow, authorityOf(request.principal!), request.params.id, request.body))));
    r.delete('/users/:id', { config: perm('users.delete'), schema: { params: IdParam, response: { 200: User } } },
      (request, reply) => executeCommand(kernel, request, reply, { idempotency: 'optional' }, async (uow) => user(await deleteUser(kernel, uow, request.params.id))));
    r.patch('/users/:id/restore', { config: perm('users.update'), schema: { params: IdParam, response: { 200: User } } },
      (request, reply) => executeCommand(kernel, request, reply, { idempotency: 'optional' }, async (uow) => user(await restoreUser(kernel, uow, request.params.id))));

    // --- roles
    const RoleBody = z.object({ name: z.string().trim().min(1).max(100), description: z.string().max(1000).optional(), permissions: z.array(z.string().max(200)).max(5000) });
    r.post('/rbac/roles', { config: perm('roles.create'), schema: { body: RoleBody, response: { 201: Role } } },
      (request, reply) => executeCommand(kernel, request, reply, { status: 201, idempotency: 'optional' }, async (uow) => role(await createRole(kernel, uow, authorityOf(request.principal!), request.body))));
    r.put('/rbac/roles/:id', { config: perm('roles.update'), schema: { params: IdParam, body: RoleBody.partial(), response: { 200: Role } } },
      (request, reply) => executeCommand(kernel, request, reply, { idempotency: 'optional' }, async (uow) => role(await updateRole(kernel, uow, authorityOf(request.principal!), request.params.id, request.body))));
    r.delete('/rbac/roles/:id', { config: perm('roles.delete'), schema: { params: IdParam } },
      (request, reply) => executeCommand(kernel, request, reply, { status: 204 }, (uow) => deleteRole(kernel, uow, authorityOf(request.principal!), request.params.id)));
    for (const change of ['assign', 'revoke'] as const) {
      r.post(`/rbac/roles/:id/${change}`, { config: perm('roles.assign'), schema: { params: IdParam, body: z.object({ user_id: z.string().min(1).max(64) }), response: { 200: User } } },
        (request, reply) => executeCommand(kernel, request, reply, { idempotency: 'optional' },
          async (uow) => user(await changeRole(kernel, uow, authorityOf(request.principal!), request.params.id, request.body.user_id, change))));
    }

    registerProviderWrites(app, kernel);
  },
});
