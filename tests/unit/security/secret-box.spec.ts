import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deriveSubkey, KeyConfigError, parseKeyMaterial, parseKeySet } from '../../../infra/security/keys';
import { SecretBox, SecretBoxError } from '../../../infra/security/secret-box';

const key = (id: string) => ({ id, key: randomBytes(32) });

/** Flips one bit of the decoded part `index` of a sealed value and re-encodes it canonically. */
const flipBit = (sealed: string, index: number, byte = 0): string => {
  const parts = sealed.split('.');
  const bytes = Buffer.from(parts[index]!, 'base64url');
  bytes[byte] = bytes[byte]! ^ 0x01;
  parts[index] = bytes.toString('base64url');
  return parts.join('.');
};

describe('a box with one key', () => {
  const box = new SecretBox([key('k1')]);

  it('opens what it sealed (text)', () => {
    expect(box.openString(box.seal('JBSWY3DPEHPK3PXP'))).toBe('JBSWY3DPEHPK3PXP');
  });

  it('opens what it sealed (bytes, including the empty value)', () => {
    const secret = randomBytes(64);
    expect(box.open(box.seal(secret))).toEqual(secret);
    expect(box.open(box.seal(''))).toHaveLength(0);
  });

  it('writes v1.<kid>.<nonce>.<ciphertext+tag> with a 96-bit nonce and a 128-bit tag', () => {
    const sealed = box.seal('abc');
    const [version, kid, nonce, body] = sealed.split('.');
    expect([version, kid]).toEqual(['v1', 'k1']);
    expect(Buffer.from(nonce!, 'base64url')).toHaveLength(12);
    expect(Buffer.from(body!, 'base64url')).toHaveLength(3 + 16);
    expect(sealed).toMatch(/^[A-Za-z0-9_.-]+$/);
  });

  it('uses a fresh nonce for every seal, so equal secrets do not look equal at rest', () => {
    const sealed = Array.from({ length: 20 }, () => box.seal('same'));
    expect(new Set(sealed.map((s) => s.split('.')[2])).size).toBe(20);
    expect(new Set(sealed).size).toBe(20);
  });

  it('does not contain the plaintext', () => {
    const plaintext = 'a-very-recognisable-plaintext';
    const sealed = box.seal(plaintext);
    expect(sealed).not.toContain(plaintext);
    expect(sealed).not.toContain(Buffer.from(plaintext).toString('base64url').slice(0, 12));
  });
});

describe('a sealed value that was altered', () => {
  const box = new SecretBox([key('k1')]);
  const sealed = box.seal('top secret value');

  it('fails when a ciphertext bit is flipped', () => {
    expect(() => box.open(flipBit(sealed, 3, 0))).toThrow(SecretBoxError);
  });

  it('fails when a tag bit is flipped', () => {
    const tagByte = Buffer.from(sealed.split('.')[3]!, 'base64url').length - 1;
    expect(() => box.open(flipBit(sealed, 3, tagByte))).toThrow(SecretBoxError);
  });

  it('fails when a nonce bit is flipped', () => {
    expect(() => box.open(flipBit(sealed, 2, 5))).toThrow(SecretBoxError);
  });

  it('fails when truncated', () => {
    const parts = sealed.split('.');
    parts[3] = parts[3]!.slice(0, 24); // 18 bytes: well-formed, but the tag is gone
    expect(() => box.open(parts.join('.'))).toThrow(SecretBoxError);
  });

  it('fails when the version is changed', () => {
    expect(() => box.open(sealed.replace(/^v1\./, 'v2.'))).toThrow(/version/);
  });

  it('fails when the text is not canonical base64url, even if it decodes to the same bytes', () => {
    // 32 body bytes take 43 characters; the last one carries 4 unused bits, so flipping its low bit changes no byte.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const sixteenBytes = new SecretBox([key('k1')]);
    const value = sixteenBytes.seal('sixteen bytes!!!');
    const parts = value.split('.');
    const body = parts[3]!;
    const last = alphabet[alphabet.indexOf(body.at(-1)!) ^ 1]!;
    parts[3] = body.slice(0, -1) + last;
    expect(Buffer.from(parts[3], 'base64url')).toEqual(Buffer.from(body, 'base64url'));
    expect(() => sixteenBytes.open(parts.join('.'))).toThrow(/canonical/);
    expect(() => box.open(`${sealed}=`)).toThrow(SecretBoxError);
  });

  it('fails on garbage', () => {
    for (const junk of ['', 'v1', 'v1.k1.a.b.c', 'v1.k1.!!!.???']) expect(() => box.open(junk)).toThrow(SecretBoxError);
  });
});

describe('a value sealed for one context', () => {
  const box = new SecretBox([key('k1')]);
  const sealed = box.seal('totp secret of user 1', 'totp:user-1');

  it('opens in that context', () => {
    expect(box.openString(sealed, 'totp:user-1')).toBe('totp secret of user 1');
  });

  it('does not open in another context (a row copied to another user)', () => {
    expect(() => box.open(sealed, 'totp:user-2')).toThrow(SecretBoxError);
    expect(() => box.open(sealed)).toThrow(SecretBoxError);
  });
});

describe('a box with the wrong key', () => {
  const sealed = new SecretBox([key('k1')]).seal('secret');

  it('fails to open when the key id matches but the key differs', () => {
    expect(() => new SecretBox([key('k1')]).open(sealed)).toThrow(/failed authentication/);
  });

  it('fails to open when it has no key with that id', () => {
    expect(() => new SecretBox([key('k2')]).open(sealed)).toThrow(/no key with id "k1"/);
  });

  it('fails to open when the kid is rewritten to one of its own keys', () => {
    const other = new SecretBox([key('k2'), key('k1')]);
    expect(() => other.open(sealed.replace('.k1.', '.k2.'))).toThrow(SecretBoxError);
  });
});

describe('a box during key rotation (new key first, old key kept)', () => {
  const oldKey = key('2025');
  const newKey = key('2026');
  const oldBox = new SecretBox([oldKey]);
  const rotated = new SecretBox([newKey, oldKey]);
  const sealedBefore = oldBox.seal('written before rotation');

  it('still opens values sealed with the old key', () => {
    expect(rotated.openString(sealedBefore)).toBe('written before rotation');
  });

  it('seals new values with the new key', () => {
    expect(rotated.seal('x').split('.')[1]).toBe('2026');
    expect(rotated.currentKeyId).toBe('2026');
  });

  it('reports old values as needing a re-seal and new ones as not', () => {
    expect(rotated.needsReseal(sealedBefore)).toBe(true);
    expect(rotated.needsReseal(rotated.seal('x'))).toBe(false);
  });

  it('cannot open old values once the old key is dropped', () => {
    expect(() => new SecretBox([newKey]).open(sealedBefore)).toThrow(SecretBoxError);
  });
});

describe('key configuration', () => {
  const bytes = randomBytes(32);

  it('reads a key as 64 hex digits', () => {
    expect(parseKeyMaterial(bytes.toString('hex'))).toEqual(bytes);
  });

  it('reads a key as base64 and as base64url', () => {
    expect(parseKeyMaterial(bytes.toString('base64'))).toEqual(bytes);
    expect(parseKeyMaterial(bytes.toString('base64url'))).toEqual(bytes);
  });

  it('refuses keys of another length without echoing the secret', () => {
    const short = randomBytes(16).toString('hex');
    expect(() => parseKeyMaterial(short)).toThrow(KeyConfigError);
    try {
      parseKeyMaterial(short);
    } catch (error) {
      expect((error as Error).message).not.toContain(short);
    }
    expect(() => parseKeyMaterial(randomBytes(48).toString('base64'))).toThrow(KeyConfigError);
  });

  it('reads a key set "kid:key,kid:key" with the first key current', () => {
    const spec = `new:${bytes.toString('base64')}, old:${randomBytes(32).toString('hex')}`;
    const box = SecretBox.fromConfig(spec);
    expect(box.currentKeyId).toBe('new');
    expect(parseKeySet(spec).map((k) => k.id)).toEqual(['new', 'old']);
  });

  it('refuses duplicate ids, bad ids and an empty set', () => {
    const material = bytes.toString('hex');
    expect(() => parseKeySet(`a:${material},a:${material}`)).toThrow(/distinct/);
    expect(() => parseKeySet(`a.b:${material}`)).toThrow(KeyConfigError);
    expect(() => parseKeySet(' , ')).toThrow(/empty/);
    expect(() => new SecretBox([])).toThrow(SecretBoxError);
    expect(() => new SecretBox([{ id: 'k', key: randomBytes(16) }])).toThrow(/32 bytes/);
  });

  it('derives independent subkeys per purpose from one master key', () => {
    const master = key('m1');
    const a = deriveSubkey(master, 'recovery-codes');
    expect(a.key).toHaveLength(32);
    expect(a.id).toBe('m1');
    expect(a.key).toEqual(deriveSubkey(master, 'recovery-codes').key);
    expect(a.key).not.toEqual(deriveSubkey(master, 'other').key);
    expect(a.key).not.toEqual(master.key);
  });
});
