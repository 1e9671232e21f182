/**
 * Password hashing (argon2id) and the password policy of spec 000: at least 12 characters, at most
 * 128, and not in the breached-password list.
 *
 * Passwords are NFKC-normalized before hashing, verifying and measuring (NIST SP 800-63B §5.1.1.2),
 * so the same password typed on two keyboards that produce different Unicode sequences
 * (composed "é" versus "e" + combining accent) still verifies.
 */
import argon2 from 'argon2';
import type { FieldError } from '../../domain/shared/errors';
import { isBreachedPassword } from './breached-passwords';

/**
 * OWASP Password Storage Cheat Sheet, first argon2id option: 19 MiB, 2 iterations, 1 lane.
 * Changing these makes verifyPassword report needsRehash for every older hash, so callers can
 * upgrade hashes at the next successful login.
 */
export const PASSWORD_HASH_PARAMS = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export const PASSWORD_MIN_LENGTH = 12;
export const PASSWORD_MAX_LENGTH = 128;

/**
 * A hash of a random, discarded password under PASSWORD_HASH_PARAMS, for dummyVerify. It is a
 * constant rather than computed at start-up so that no request ever pays for making it; a unit
 * test fails if the parameters change and it is not regenerated.
 */
export const DUMMY_PASSWORD_HASH =
  '$argon2id$v=19$m=19456,t=2,p=1$kyRfYKxfFgV6VQjg3Bi4Ew$DvXBxuYOyb3RuSsvH/jHc3SUbc29vCGFFrvWb2aY6QU';

const normalize = (password: string): string => password.normalize('NFKC');

export const hashPassword = (password: string): Promise<string> =>
  argon2.hash(normalize(password), PASSWORD_HASH_PARAMS);

export interface PasswordCheck {
  ok: boolean;
  /** the password was right but the stored hash uses other parameters or another variant: store hashPassword(password) */
  needsRehash: boolean;
}

/** Throws only when the stored hash is not an argon2 hash at all (corrupt data should be loud, not a silent "wrong password"). */
export const verifyPassword = async (hash: string, password: string): Promise<PasswordCheck> => {
  const ok = await argon2.verify(hash, normalize(password));
  return { ok, needsRehash: ok && (!hash.startsWith('$argon2id$') || argon2.needsRehash(hash, PASSWORD_HASH_PARAMS)) };
};

/**
 * Spends the time of one verifyPassword when there is no account to check, so that login and
 * recovery answer in the same time whether or not an email is registered (anti-enumeration).
 * The result is thrown away; it always "fails".
 */
export const dummyVerify = async (password = ''): Promise<void> => {
  await argon2.verify(DUMMY_PASSWORD_HASH, normalize(password));
};

/**
 * Every rule the password breaks, as validation errors for the problem's errors[] (empty = acceptable).
 * Length counts Unicode code points after normalization, not UTF-16 units, so an emoji is one character.
 */
export const checkPasswordPolicy = (password: string): FieldError[] => {
  const normalized = normalize(password);
  const length = [...normalized].length;
  const errors: FieldError[] = [];
  if (length < PASSWORD_MIN_LENGTH) {
    errors.push({
      field: 'password',
      code: 'TOO_SHORT',
      message: `The password must be at least ${PASSWORD_MIN_LENGTH} characters long.`,
    });
  }
  if (length >= PASSWORD_MIN_LENGTH && normalized.trim() === '') {
    errors.push({
      field: 'password',
      code: 'WHITESPACE_ONLY',
      message: 'The password must not be only spaces or other blank characters.',
    });
  } else if (length >= PASSWORD_MIN_LENGTH && new Set(normalized).size === 1) {
    errors.push({
      field: 'password',
      code: 'SINGLE_CHARACTER',
      message: 'The password must not be one character repeated.',
    });
  }
  if (length > PASSWORD_MAX_LENGTH) {
    errors.push({
      field: 'password',
      code: 'TOO_LONG',
      message: `The password must be at most ${PASSWORD_MAX_LENGTH} characters long.`,
    });
  } else if (isBreachedPassword(normalized)) {
    // Too-long input is not looked up: no list entry is longer than the maximum.
    errors.push({
      field: 'password',
      code: 'BREACHED_PASSWORD',
      message: 'This password appears in a list of breached passwords; choose another.',
    });
  }
  return errors;
};
