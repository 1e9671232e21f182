import { z } from 'zod';
import { CamelPair, Email, Name, NewPassword, Token, UserView } from '../../domain/identity/views';
import { callerOf } from '../../infra/http/auth';
import {
  register,
  requestReset,
  requestVerifyEmail,
  resetPassword,
  verifyEmail,
} from '../../commands/identity/account';
import { confirmEmailChange } from '../../commands/identity/email-change';
import type { IdentityRoutes } from './http';
import { bearer, noBody, ownSession, pub, typed } from './http';

/** Accounts (spec 000, Authentication and Security flows): registration, email verification, password reset, address change. */
const RegisterBody = z.object({
  email: Email,
  password: NewPassword,
  firstName: Name.optional(),
  lastName: Name.optional(),
  tenantName: z.string().min(1).max(100).optional(),
  tenantSlug: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{1,62}$/)
    .optional(),
});
const Registered = CamelPair.extend({
  user: UserView,
  tenant: z.object({ id: z.string(), name: z.string(), slug: z.string() }),
});
const TokenBody = z.object({ token: Token });
const ResetBody = z.object({ token: Token, password: NewPassword });
const EmailChangeAnswer = z.union([
  z.object({ email_change: z.literal('completed'), email: z.string() }),
  z.object({ email_change: z.literal('pending'), confirmed: z.enum(['old', 'new']) }),
]);

export const accountRoutes: IdentityRoutes = (app, kernel) => {
  const r = typed(app);

  // 409: the email has an account; 400 slug-taken
  r.post(
    '/auth/register',
    { config: { ...pub, problems: [409] }, schema: { body: RegisterBody, response: { 201: Registered } } },
    async (request, reply) => reply.code(201).send(await register(kernel, request.id, request.body)),
  );

  // 202 at once; 429 beyond 3 an hour (with that limit's own X-RateLimit-* headers)
  r.post(
    '/auth/request-verify-email',
    {
      config: { ...bearer, ...ownSession },
      schema: {
        response: { 202: z.null().describe('a verification mail is on its way (unless the address is verified)') },
      },
    },
    async (request, reply) => {
      await requestVerifyEmail(kernel, callerOf(request).userId);
      return noBody(reply, 202);
    },
  );

  r.post(
    '/auth/verify-email',
    {
      config: { ...pub, problems: [401] },
      schema: { body: TokenBody, response: { 200: z.object({ email_verified: z.literal(true) }) } },
    },
    async (request) => verifyEmail(kernel, request.id, request.body.token),
  );

  // always 202, registered or not (no enumeration)
  r.post(
    '/auth/request-reset',
    {
      config: pub,
      schema: {
        body: z.object({ email: z.string().max(254) }),
        response: { 202: z.null().describe('a reset mail is on its way if the address has an account') },
      },
    },
    async (request, reply) => {
      requestReset(kernel, request.body.email);
      return noBody(reply, 202);
    },
  );

  r.post(
    '/auth/reset-password',
    {
      config: { ...pub, problems: [401] },
      schema: { body: ResetBody, response: { 200: z.object({ message: z.string() }) } },
    },
    async (request) => resetPassword(kernel, request.id, request.body),
  );

  // 409: the new address has become another account's meanwhile
  r.post(
    '/auth/confirm-email-change',
    { config: { ...pub, problems: [401, 409] }, schema: { body: TokenBody, response: { 200: EmailChangeAnswer } } },
    async (request) => confirmEmailChange(kernel, request.id, request.body.token),
  );
};
