import { z } from 'zod';
import { callerOf } from '../../infra/http/auth';
import { remainingRecoveryCodes } from '../../projections/identity/queries';
import type { IdentityReads } from './http';
import { typed } from './http';

/** MFA of the signed-in user (spec 000, MFA): how many recovery codes are left. */
export const mfaReads: IdentityReads = (app, kernel) => {
  typed(app).get(
    '/auth/recovery-codes',
    { config: { access: 'bearer' }, schema: { response: { 200: z.object({ remaining: z.number().int() }) } } },
    async (request) => ({ remaining: await remainingRecoveryCodes(kernel.db, callerOf(request).userId) }),
  );
};
