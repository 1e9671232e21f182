/**
 * MFA recovery codes: 10 per user, XXXX-XXXX-XXXX over A–Z 0–9, single use, stored only as
 * one-way hashes.
 *
 * Hashing choice: HMAC-SHA-256 under a server-held key, over the user id and the code.
 * A code has 12 × log2(36) ≈ 62 bits of entropy. That defeats online guessing (attempts are rate
 * limited and lock the account), but not an offline search of a stolen table hashed with plain
 * salted SHA-256: about 2^61 hashes find a code, weeks on a rented GPU cluster, and one code is
 * enough to pass MFA. The HMAC key lives in configuration, not in the database, so a database dump
 * alone is worthless. A slow password hash would not fit either: a login attempt does not say
 * which of the 10 codes it is, so every attempt would cost 10 slow hashes and invite denial of
 * service. Putting the user id in the MAC ties each hash to its user, so hashes copied between
 * accounts never match and equal codes of two users hash differently.
 *
 * Stored form: "h1.<kid>.<hex>". The key id lets the HMAC key rotate: new codes use the current
 * key, and codes hashed under an older key still verify while that key stays configured (until the
 * user regenerates or uses them up).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { assertDistinctIds, assertKeyId, KEY_BYTES, type NamedKey } from './keys';

export const RECOVERY_CODE_COUNT = 10;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const CODE_LENGTH = 12;
const GROUP_LENGTH = 4;
/** The largest multiple of 36 that fits in a byte: bytes at or above it are discarded, not folded, so every character is equally likely. */
const REJECTION_LIMIT = 256 - (256 % ALPHABET.length); // 252
const HASH_VERSION = 'h1';
const NORMALIZED_CODE = /^[A-Z0-9]{12}$/;
const STORED_HASH = /^h1\.([A-Za-z0-9_-]{1,32})\.([0-9a-f]{64})$/;

/** 12 characters drawn uniformly from A–Z 0–9 by rejection sampling over CSPRNG bytes. */
const randomCode = (): string => {
  let code = '';
  while (code.length < CODE_LENGTH) {
    // 16 bytes usually suffice (each byte is accepted with probability 252/256); loop on the rare shortfall.
    for (const byte of randomBytes(16)) {
      if (byte < REJECTION_LIMIT && code.length < CODE_LENGTH) code += ALPHABET[byte % ALPHABET.length];
    }
  }
  return code;
};

export const formatRecoveryCode = (normalized: string): string =>
  [0, GROUP_LENGTH, 2 * GROUP_LENGTH].map((start) => normalized.slice(start, start + GROUP_LENGTH)).join('-');

/** Distinct codes in display form XXXX-XXXX-XXXX. */
export const generateRecoveryCodes = (count = RECOVERY_CODE_COUNT): string[] => {
  const codes = new Set<string>();
  while (codes.size < count) codes.add(randomCode());
  return [...codes].map(formatRecoveryCode);
};

/**
 * What a person typed, in canonical form (12 characters, no dashes), or null when it cannot be a
 * code. Surrounding and inner spaces, dashes and lowercase are accepted because codes are copied
 * from paper and password managers.
 */
export const normalizeRecoveryCode = (input: string): string | null => {
  const normalized = input.replace(/[\s-]+/g, '').toUpperCase();
  return NORMALIZED_CODE.test(normalized) ? normalized : null;
};

export class RecoveryCodeHasher {
  private readonly current: NamedKey;
  private readonly keys: ReadonlyMap<string, Buffer>;

  /** keys[0] hashes new codes; all of them verify. Derive them with deriveSubkey(master, 'recovery-codes'). */
  constructor(keys: readonly NamedKey[]) {
    if (keys.length === 0) throw new RangeError('the recovery-code hasher needs at least one key');
    for (const { id, key } of keys) {
      assertKeyId(id);
      if (key.length !== KEY_BYTES) throw new RangeError(`recovery-code keys are ${KEY_BYTES} bytes`);
    }
    assertDistinctIds(keys);
    this.current = keys[0]!;
    this.keys = new Map(keys.map((k) => [k.id, Buffer.from(k.key)]));
  }

  /** The stored form of a code (display or typed form both accepted). */
  hash(userId: string, code: string): string {
    const normalized = normalizeRecoveryCode(code);
    if (!normalized) throw new RangeError('not a recovery code');
    return `${HASH_VERSION}.${this.current.id}.${mac(this.current.key, userId, normalized).toString('hex')}`;
  }

  /**
   * The index in storedHashes of the hash the input matches, or -1. Every stored hash is compared
   * in constant time and the loop never stops early, so timing does not reveal which code or how
   * much of it matched. The caller consumes the matched code atomically (delete it in the same
   * transaction that checks it still exists) so it cannot be used twice.
   */
  verify(userId: string, input: string, storedHashes: readonly string[]): number {
    const normalized = normalizeRecoveryCode(input);
    if (!normalized) return -1;
    const macs = new Map<string, Buffer>();
    let found = -1;
    storedHashes.forEach((stored, index) => {
      const parsed = STORED_HASH.exec(stored);
      const key = parsed ? this.keys.get(parsed[1]!) : undefined;
      if (!parsed || !key) return; // a hash under a key no longer configured cannot match
      let expected = macs.get(parsed[1]!);
      if (!expected) {
        expected = mac(key, userId, normalized);
        macs.set(parsed[1]!, expected);
      }
      if (timingSafeEqual(expected, Buffer.from(parsed[2]!, 'hex')) && found < 0) found = index;
    });
    return found;
  }
}

// The code is fixed-length and last, so "userId:code" cannot be produced by another (userId, code) pair.
const mac = (key: Buffer, userId: string, normalizedCode: string): Buffer =>
  createHmac('sha256', key).update(`${userId}:${normalizedCode}`, 'utf8').digest();
