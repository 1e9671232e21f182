import { z } from 'zod';
import {
  CamelPair,
  Password,
  SnakePair,
  TenantId,
  TenantSelection,
  Token,
  TotpCode,
} from '../../domain/identity/views';
import { commonErrors } from '../../domain/shared/errors';
import { bearerToken, callerOf } from '../../infra/http/auth';
import { executeCommand } from '../../infra/http/commands';
import { confirmMfa } from '../../commands/identity/mfa';
import {
  completeMfaLogin,
  endSession,
  login,
  recoveryLogin,
  refreshSession,
  selectTenant,
  switchTenant,
} from '../../commands/identity/session';
import type { IdentityRoutes } from './http';
import { bearer, noBody, ownSession, pub, typed } from './http';

/**
 * Sessions (spec 000, Authentication): login with a password, the MFA challenge, a recovery code;
 * the tenant choice and switch; refresh and logout.
 */
const LoginBody = z.object({ email: z.string().max(254), password: Password, mfaCode: TotpCode.optional() });
const RefreshBody = z.object({ refreshToken: Token });
const MfaVerifyBody = z.object({ code: TotpCode, mfa_token: Token.optional() });
const MfaConfirmed = z.object({ mfa_enabled: z.literal(true), recovery_codes_remaining: z.number().int() });
const SelectTenantBody = z.object({ sessionToken: Token, tenantId: TenantId, rememberChoice: z.boolean().optional() });
const SwitchTenantBody = z.object({ tenantId: TenantId });
const RecoveryBody = z.object({ email: z.string().max(254), recovery_code: z.string().max(32) });
const SessionAnswer = z.union([CamelPair, TenantSelection]);

export const sessionRoutes: IdentityRoutes = (app, kernel) => {
  const r = typed(app);

  // 401 invalid-credentials or mfa-required (with mfa_token), 403 account-locked
  r.post(
    '/auth/login',
    { config: { ...pub, problems: [401, 403] }, schema: { body: LoginBody, response: { 200: SessionAnswer } } },
    async (request) => login(kernel, request.id, request.body),
  );

  r.post(
    '/auth/refresh',
    { config: { ...pub, problems: [401, 403] }, schema: { body: RefreshBody, response: { 200: CamelPair } } },
    async (request) => refreshSession(kernel, request.body.refreshToken),
  );

  r.post(
    '/auth/logout',
    {
      config: { ...bearer, ...ownSession },
      schema: { body: RefreshBody, response: { 204: z.null().describe('the session ended') } },
    },
    async (request, reply) => {
      await endSession(kernel, callerOf(request).userId, request.body.refreshToken);
      return noBody(reply, 204);
    },
  );

  // one path, two uses (spec 000): with mfa_token it completes a login; with a bearer token it confirms the setup
  r.post(
    '/auth/mfa/verify',
    {
      config: { ...pub, problems: [401, 403, 409] },
      schema: { body: MfaVerifyBody, response: { 200: z.union([MfaConfirmed, SnakePair, TenantSelection]) } },
    },
    async (request, reply) => {
      if (request.body.mfa_token !== undefined)
        return completeMfaLogin(kernel, request.id, request.body.mfa_token, request.body.code);
      const token = bearerToken(request.headers.authorization);
      if (!token) throw commonErrors.unauthorized();
      request.principal = await kernel.authenticator.authenticate(token);
      return executeCommand(kernel, request, reply, {}, (uow) =>
        confirmMfa(kernel, uow, callerOf(request).userId, request.body.code),
      );
    },
  );

  // 404: a tenant the user is not an active member of
  r.post(
    '/auth/select-tenant',
    { config: { ...pub, problems: [401, 404] }, schema: { body: SelectTenantBody, response: { 200: CamelPair } } },
    async (request) => selectTenant(kernel, request.id, request.body),
  );

  r.post(
    '/auth/switch-tenant',
    {
      config: { ...bearer, ...ownSession, problems: [404] },
      schema: { body: SwitchTenantBody, response: { 200: CamelPair } },
    },
    async (request) => switchTenant(kernel, callerOf(request), request.body.tenantId),
  );

  // 401 a wrong or used code, 403 recovery locked (or the account), 429 too many attempts from the address
  r.post(
    '/auth/recovery',
    { config: { ...pub, problems: [401, 403] }, schema: { body: RecoveryBody, response: { 200: SessionAnswer } } },
    async (request) =>
      recoveryLogin(kernel, request.id, request.ip, {
        email: request.body.email,
        recoveryCode: request.body.recovery_code,
      }),
  );
};
