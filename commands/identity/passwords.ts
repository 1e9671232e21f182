import { identityErrors } from '../../domain/identity/errors';
import { identityRuntime } from '../../projections/identity/shared/runtime';
import type { Kernel } from '../../infra/kernel';
import type { Queryable } from '../../infra/postgres/db';
import { checkPasswordPolicy } from '../../infra/security/passwords';
import { credentials } from './repositories/credentials';

/** The login email and password of an account: normalization, the policy, the bounded hashing, the claim of an address. */

export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

/** argon2id work of one account (or email), bounded so one caller cannot starve the others (infra/security/work-limiter.ts) */
export const passwordWork = <T>(kernel: Kernel, key: string, work: () => Promise<T>): Promise<T> =>
  identityRuntime(kernel).passwordWork.run(key, work);

export const assertPasswordPolicy = (password: string): void => {
  const errors = checkPasswordPolicy(password);
  if (errors.length) throw identityErrors.passwordPolicy(errors);
};

/** claims the email for a new account in the command's transaction; a taken email is 409 */
export const claimEmail = async (
  kernel: Kernel,
  q: Queryable,
  userId: string,
  email: string,
  passwordHash: string | null,
): Promise<void> => {
  if (!(await credentials.claim(q, { userId, email, passwordHash, at: kernel.clock.now() })))
    throw identityErrors.emailTaken();
};
