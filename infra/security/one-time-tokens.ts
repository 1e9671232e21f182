/**
 * Opaque one-time tokens (email verification, password reset, invitation, refresh, mfa_token,
 * session token): 256 random bits sent to the user, only a hash stored, so a leaked table cannot
 * be replayed.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const TOKEN_BYTES = 32;
/** 32 bytes in unpadded base64url are always 43 characters. */
const OPAQUE_TOKEN = /^[A-Za-z0-9_-]{43}$/;

/** 256 bits from the CSPRNG, base64url without padding: safe in URLs and email links as is. */
export const newOpaqueToken = (): string => randomBytes(TOKEN_BYTES).toString('base64url');

/** A cheap shape check before any lookup, so garbage never reaches the database. */
export const isOpaqueToken = (value: string): boolean => OPAQUE_TOKEN.test(value);

/**
 * SHA-256, hex. A fast unsalted hash is the right tool here, unlike for passwords: the input has
 * 256 bits of entropy, so neither a dictionary nor brute force nor a precomputed table can invert
 * it, and slow hashing would only cost CPU on every lookup. Being deterministic, the hash can be
 * the lookup key itself (a unique index), so no per-row salt is needed to find the row.
 */
export const hashToken = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');

/**
 * Constant-time equality of two hex strings or byte arrays. Time depends only on the lengths:
 * on a length mismatch it still does one full comparison (of the first input with itself) and
 * answers false, so the only thing a timing observer learns is whether the lengths differ, which
 * for hashes of a fixed size is public anyway.
 */
export const safeEqual = (a: string | Uint8Array, b: string | Uint8Array): boolean => {
  const left = typeof a === 'string' ? Buffer.from(a, 'utf8') : a;
  const right = typeof b === 'string' ? Buffer.from(b, 'utf8') : b;
  if (left.length !== right.length) {
    timingSafeEqual(left, left);
    return false;
  }
  return timingSafeEqual(left, right);
};
