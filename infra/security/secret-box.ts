/**
 * Encryption of small secrets at rest (TOTP secrets, signing keys): AES-256-GCM with a random
 * 96-bit nonce, written as
 *
 *   v1.<kid>.<nonce>.<ciphertext‖tag>        (each binary part base64url, no padding)
 *
 * The version lets the format change without guessing; the key id lets keys rotate: the first key
 * of the set seals, every key of the set opens, and needsReseal() finds values to re-encrypt
 * before an old key is dropped.
 *
 * The version, the key id and a caller-chosen context (for example "totp:<userId>") are bound as
 * additional authenticated data, so a value copied to another row or another purpose does not open.
 *
 * Random 96-bit nonces are safe up to about 2^32 seals per key (NIST SP 800-38D §8.3); small secrets
 * written once per user are far below that, and rotation resets the count.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { assertDistinctIds, assertKeyId, KEY_BYTES, parseKeySet, type NamedKey } from './keys';

const VERSION = 'v1';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

export class SecretBoxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretBoxError';
  }
}

const additionalData = (kid: string, context: string): Buffer => Buffer.from(`${VERSION}.${kid}.${context}`, 'utf8');

export class SecretBox {
  private readonly current: NamedKey;
  private readonly keys: ReadonlyMap<string, Buffer>;

  /** keys[0] seals; all of them open. */
  constructor(keys: readonly NamedKey[]) {
    if (keys.length === 0) throw new SecretBoxError('a secret box needs at least one key');
    for (const { id, key } of keys) {
      assertKeyId(id);
      if (key.length !== KEY_BYTES) throw new SecretBoxError(`secret box keys are ${KEY_BYTES} bytes`);
    }
    assertDistinctIds(keys);
    this.current = keys[0]!;
    this.keys = new Map(keys.map((k) => [k.id, Buffer.from(k.key)]));
  }

  /** From configuration text "kid:key[,kid:key…]", keys in hex or base64 (see keys.ts). */
  static fromConfig(spec: string): SecretBox {
    return new SecretBox(parseKeySet(spec));
  }

  get currentKeyId(): string {
    return this.current.id;
  }

  seal(plaintext: string | Uint8Array, context = ''): string {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current.key, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(additionalData(this.current.id, context));
    const body = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
    return [VERSION, this.current.id, nonce.toString('base64url'), body.toString('base64url')].join('.');
  }

  /** Opens a sealed value; throws SecretBoxError when it is malformed, its key is unknown, or it was altered. */
  open(sealed: string, context = ''): Buffer {
    const { kid, nonce, body } = parse(sealed);
    const key = this.keys.get(kid);
    if (!key) throw new SecretBoxError(`no key with id "${kid}" is configured`);
    const decipher = createDecipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES });
    decipher.setAAD(additionalData(kid, context));
    decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]);
    } catch {
      // One message for a wrong key, a wrong context and tampering: they are indistinguishable by design.
      throw new SecretBoxError('the sealed value failed authentication');
    }
  }

  openString(sealed: string, context = ''): string {
    return this.open(sealed, context).toString('utf8');
  }

  /** True when the value was sealed with a key other than the current one and should be re-sealed. */
  needsReseal(sealed: string): boolean {
    return parse(sealed).kid !== this.current.id;
  }
}

const parse = (sealed: string): { kid: string; nonce: Buffer; body: Buffer } => {
  const parts = sealed.split('.');
  if (parts.length !== 4) throw new SecretBoxError('a sealed value has four dot-separated parts');
  const [version, kid, nonceText, bodyText] = parts as [string, string, string, string];
  if (version !== VERSION) throw new SecretBoxError(`unsupported sealed-value version "${version.slice(0, 8)}"`);
  if (!BASE64URL.test(kid) || kid.length > 32) throw new SecretBoxError('the sealed value has a malformed key id');
  if (!BASE64URL.test(nonceText) || !BASE64URL.test(bodyText))
    throw new SecretBoxError('the sealed value is not base64url');
  const nonce = Buffer.from(nonceText, 'base64url');
  const body = Buffer.from(bodyText, 'base64url');
  // Canonical encoding only, so one ciphertext has exactly one accepted text form.
  if (nonce.toString('base64url') !== nonceText || body.toString('base64url') !== bodyText) {
    throw new SecretBoxError('the sealed value is not canonical base64url');
  }
  if (nonce.length !== NONCE_BYTES) throw new SecretBoxError('the sealed value has a malformed nonce');
  if (body.length < TAG_BYTES) throw new SecretBoxError('the sealed value is too short');
  return { kid, nonce, body };
};
