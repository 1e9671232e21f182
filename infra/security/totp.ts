/**
 * TOTP (RFC 6238) as the specification fixes it: HMAC-SHA-1, 6 digits, 30-second step; the current
 * and the immediately preceding step are accepted, nothing else (no future step: a code from the
 * next window means a clock problem on the device, and every extra window accepted is another
 * million-to-one guess per attempt).
 *
 * Replay is the caller's job, because it needs storage: verifyTotp returns the time-step counter
 * that matched, and the caller must accept each (user, counter) at most once. Either keep the pair
 * in a replay cache for 90 s (TOTP_REPLAY_TTL_SECONDS: two windows plus slack, after which the
 * counter can no longer verify anyway), or, stronger and simpler, store the last accepted counter
 * per user and accept only a counter greater than it (RFC 6238 §5.2). The check and the update
 * must be atomic (SET NX in Redis, or a conditional UPDATE in PostgreSQL), or two concurrent
 * requests can both pass.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { base32Decode, base32Encode } from './base32';

export { base32Decode, base32Encode, Base32Error } from './base32';

export const TOTP_STEP_SECONDS = 30;
export const TOTP_DIGITS = 6;
export const TOTP_REPLAY_TTL_SECONDS = 90;
/** RFC 4226 §4 requires at least 128 bits of shared secret and recommends 160. */
const MIN_SECRET_BYTES = 16;
const SECRET_BYTES = 20;

/** A secret either as raw bytes or as the base32 text shown to the user. */
export type TotpSecret = Uint8Array | string;

const secretBytes = (secret: TotpSecret): Uint8Array => (typeof secret === 'string' ? base32Decode(secret) : secret);

/** A fresh 160-bit secret in base32, the length RFC 4226 recommends for HMAC-SHA-1. */
export const generateTotpSecret = (): string => base32Encode(randomBytes(SECRET_BYTES));

/** HOTP (RFC 4226 §5.3): HMAC-SHA-1 over the 8-byte big-endian counter, dynamic truncation, mod 10^digits. */
export const hotp = (secret: TotpSecret, counter: number, digits = TOTP_DIGITS): string => {
  const key = secretBytes(secret);
  if (key.length < MIN_SECRET_BYTES) throw new RangeError(`a TOTP secret needs at least ${MIN_SECRET_BYTES} bytes`);
  if (!Number.isSafeInteger(counter) || counter < 0)
    throw new RangeError('the HOTP counter must be a non-negative integer');
  if (!Number.isInteger(digits) || digits < 6 || digits > 8) throw new RangeError('HOTP codes have 6 to 8 digits');
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac('sha1', key).update(message).digest();
  const offset = mac[mac.length - 1]! & 0x0f;
  const binary = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(binary % 10 ** digits).padStart(digits, '0');
};

/** The time-step counter for a Unix time in seconds (T0 = 0). */
export const totpCounter = (timeSeconds: number): number => Math.floor(timeSeconds / TOTP_STEP_SECONDS);

export const totpCode = (secret: TotpSecret, timeSeconds: number, digits = TOTP_DIGITS): string =>
  hotp(secret, totpCounter(timeSeconds), digits);

/**
 * Checks a 6-digit code against the current and the previous step and returns the counter that
 * matched, or null. Spaces are ignored because apps display codes as "123 456".
 * Both candidates are always computed and compared in constant time, so the response time does
 * not tell an attacker how close a guess was or which window was tried.
 * The returned counter must go through the replay rule described at the top of this file.
 */
export const verifyTotp = (secret: TotpSecret, code: string, nowSeconds: number): number | null => {
  if (code.length > 16) return null; // bound the work on hostile input before any regex runs
  const candidate = code.replace(/\s+/g, '');
  if (!/^\d{6}$/.test(candidate)) return null;
  const given = Buffer.from(candidate, 'ascii');
  const current = totpCounter(nowSeconds);
  const matchesCurrent = timingSafeEqual(given, Buffer.from(hotp(secret, current), 'ascii'));
  const previous = current - 1;
  const matchesPrevious = previous >= 0 && timingSafeEqual(given, Buffer.from(hotp(secret, previous), 'ascii'));
  if (matchesCurrent) return current;
  if (matchesPrevious) return previous;
  return null;
};

/**
 * The otpauth:// URI an authenticator app scans (Key URI Format). The label is "issuer:account"
 * and the issuer is repeated as a parameter, which apps prefer. Neither part may contain a colon,
 * since apps split the label on it.
 */
export const otpauthUri = ({
  issuer,
  account,
  secretBase32,
}: {
  issuer: string;
  account: string;
  secretBase32: string;
}): string => {
  if (!issuer || !account) throw new RangeError('an otpauth URI needs an issuer and an account');
  if (issuer.includes(':') || account.includes(':')) throw new RangeError('issuer and account may not contain a colon');
  base32Decode(secretBase32); // refuse to publish a secret the app could not read
  const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(account)}`;
  const query = [
    `secret=${secretBase32.replace(/=+$/, '').toUpperCase()}`,
    `issuer=${encodeURIComponent(issuer)}`,
    'algorithm=SHA1',
    `digits=${TOTP_DIGITS}`,
    `period=${TOTP_STEP_SECONDS}`,
  ].join('&');
  return `otpauth://totp/${label}?${query}`;
};
