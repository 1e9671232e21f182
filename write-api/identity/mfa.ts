import { z } from 'zod';
import { Password, TotpCode } from '../../domain/identity/views';
import { callerOf } from '../../infra/http/auth';
import { executeCommand } from '../../infra/http/commands';
import { disableMfa, enableMfa, proveBothFactors, regenerateRecoveryCodes } from '../../commands/identity/mfa';
import type { IdentityRoutes } from './http';
import { bearer, ownSession, typed } from './http';

/** MFA of the signed-in user (spec 000, MFA): setup, disabling, new recovery codes. The setup is confirmed by POST /auth/mfa/verify (session.ts). */
const MfaSetup = z.object({
  secret: z.string(),
  otpauth_uri: z.string(),
  qr_code_svg: z.string(),
  recovery_codes: z.array(z.string()),
});
const BothFactors = z.object({ code: TotpCode, password: Password });

export const mfaRoutes: IdentityRoutes = (app, kernel) => {
  const r = typed(app);

  // 409: MFA is on already
  r.post(
    '/auth/mfa/enable',
    { config: { ...bearer, ...ownSession, problems: [409] }, schema: { response: { 200: MfaSetup } } },
    (request, reply) =>
      executeCommand(kernel, request, reply, {}, (uow) =>
        enableMfa(kernel, uow, callerOf(request).userId, callerOf(request).email),
      ),
  );

  r.post(
    '/auth/mfa/disable',
    {
      config: { ...bearer, ...ownSession },
      schema: { body: BothFactors, response: { 200: z.object({ mfa_enabled: z.literal(false) }) } },
    },
    async (request, reply) => {
      await proveBothFactors(kernel, callerOf(request).userId, request.body);
      return executeCommand(kernel, request, reply, {}, (uow) => disableMfa(kernel, uow, callerOf(request).userId));
    },
  );

  r.post(
    '/auth/recovery-codes/regenerate',
    {
      config: { ...bearer, ...ownSession },
      schema: { body: BothFactors, response: { 200: z.object({ recovery_codes: z.array(z.string()) }) } },
    },
    async (request, reply) => {
      await proveBothFactors(kernel, callerOf(request).userId, request.body);
      return executeCommand(kernel, request, reply, {}, (uow) =>
        regenerateRecoveryCodes(kernel, uow, callerOf(request).userId),
      );
    },
  );
};
