import { describe, expect, it } from 'vitest';
import { hashToken, isOpaqueToken, newOpaqueToken, safeEqual } from '../../../infra/security/one-time-tokens';

describe('a new opaque token', () => {
  it('is 256 bits in unpadded base64url (43 characters)', () => {
    const token = newOpaqueToken();
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(token, 'base64url')).toHaveLength(32);
    expect(isOpaqueToken(token)).toBe(true);
  });

  it('never repeats', () => {
    expect(new Set(Array.from({ length: 1000 }, newOpaqueToken)).size).toBe(1000);
  });
});

describe('the shape check', () => {
  it.each(['', 'short', `${'A'.repeat(42)}=`, `${'A'.repeat(44)}`, `${'A'.repeat(42)}+`])('refuses "%s"', (value) => {
    expect(isOpaqueToken(value)).toBe(false);
  });
});

describe('the stored hash of a token', () => {
  it('is SHA-256 in hex (FIPS 180-2 vector for "abc")', () => {
    expect(hashToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('is stable, so it can be the lookup key', () => {
    const token = newOpaqueToken();
    expect(hashToken(token)).toBe(hashToken(token));
    expect(hashToken(token)).not.toBe(hashToken(newOpaqueToken()));
  });
});

describe('constant-time comparison', () => {
  const a = hashToken('a');
  const changeAt = (text: string, i: number) => text.slice(0, i) + (text[i] === '0' ? '1' : '0') + text.slice(i + 1);

  it('is true for equal strings and equal bytes', () => {
    expect(safeEqual(a, `${a}`)).toBe(true);
    expect(safeEqual(Buffer.from('xyz'), new Uint8Array([0x78, 0x79, 0x7a]))).toBe(true);
  });

  it('is false when one character differs, first or last', () => {
    expect(safeEqual(a, changeAt(a, 0))).toBe(false);
    expect(safeEqual(a, changeAt(a, a.length - 1))).toBe(false);
  });

  it('is false, without throwing, when the lengths differ', () => {
    expect(safeEqual(a, a.slice(0, -1))).toBe(false);
    expect(safeEqual('', a)).toBe(false);
    expect(safeEqual(Buffer.alloc(3), Buffer.alloc(4))).toBe(false);
  });
});
