/**
 * Symmetric key material from configuration, shared by the secret box and the recovery-code hasher.
 * A key set is written "kid:material[,kid:material…]"; the first entry is the current key (it seals
 * or hashes new values) and the others are kept so older values can still be read during rotation.
 */
import { hkdfSync } from 'node:crypto';

export const KEY_BYTES = 32;
const KID_PATTERN = /^[A-Za-z0-9_-]{1,32}$/;

export interface NamedKey {
  /** short identifier stored beside every value the key produced, so it can be found again */
  readonly id: string;
  readonly key: Buffer;
}

export class KeyConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyConfigError';
  }
}

export const assertKeyId = (id: string): void => {
  if (!KID_PATTERN.test(id)) throw new KeyConfigError('a key id is 1–32 characters of A–Z, a–z, 0–9, _ or -');
};

/**
 * Reads 32 bytes given as 64 hex digits or as base64 / base64url. Hex is tried first because a
 * 64-digit hex string is also valid base64 (of 48 bytes) and would otherwise be misread.
 * The error never repeats the input: it is a secret.
 */
export const parseKeyMaterial = (text: string): Buffer => {
  const trimmed = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return Buffer.from(trimmed, 'hex');
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed)) {
    const bytes = Buffer.from(trimmed.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (bytes.length === KEY_BYTES) return bytes;
  }
  throw new KeyConfigError(`a key must be ${KEY_BYTES} bytes written as 64 hex digits or as base64`);
};

/** Parses "kid:material,kid:material"; the first key is the current one. */
export const parseKeySet = (spec: string): NamedKey[] => {
  const entries = spec
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
  if (entries.length === 0) throw new KeyConfigError('the key set is empty');
  const keys = entries.map((entry) => {
    const separator = entry.indexOf(':');
    if (separator < 0) throw new KeyConfigError('each key is written kid:material');
    const id = entry.slice(0, separator);
    assertKeyId(id);
    return { id, key: parseKeyMaterial(entry.slice(separator + 1)) };
  });
  assertDistinctIds(keys);
  return keys;
};

export const assertDistinctIds = (keys: readonly NamedKey[]): void => {
  if (new Set(keys.map((k) => k.id)).size !== keys.length) throw new KeyConfigError('key ids must be distinct');
};

/**
 * Derives an independent key for one purpose from a configured master key (HKDF-SHA-256), so one
 * configured secret can serve several uses without a value made for one use ever being valid for
 * another. The purpose string is part of the derivation: never reuse one for a different use.
 */
export const deriveSubkey = (master: NamedKey, purpose: string): NamedKey => ({
  id: master.id,
  key: Buffer.from(hkdfSync('sha256', master.key, Buffer.alloc(0), `platform:${purpose}`, KEY_BYTES)),
});
