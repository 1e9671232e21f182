import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  formatRecoveryCode,
  generateRecoveryCodes,
  normalizeRecoveryCode,
  RECOVERY_CODE_COUNT,
  RecoveryCodeHasher,
} from '../../../infra/security/recovery-codes';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const key = (id: string) => ({ id, key: randomBytes(32) });

describe('a freshly generated set of recovery codes', () => {
  const codes = generateRecoveryCodes();

  it('has 10 codes', () => {
    expect(codes).toHaveLength(RECOVERY_CODE_COUNT);
  });

  it('writes each code as XXXX-XXXX-XXXX in uppercase letters and digits', () => {
    for (const code of codes) expect(code).toMatch(/^[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}$/);
  });

  it('has no duplicate code', () => {
    expect(new Set(codes).size).toBe(codes.length);
  });
});

describe('the characters of many generated codes', () => {
  it('are uniform over the 36 symbols (no modulo bias)', () => {
    // 240,000 characters. Folding a byte with "% 36" instead of rejecting would make A–D 12.5 % more
    // frequent (chi-square about 400); a uniform source stays below 100 with probability > 1 − 10⁻⁶ (35 degrees of freedom).
    const counts = new Map<string, number>();
    for (let i = 0; i < 2_000; i++) {
      for (const code of generateRecoveryCodes()) {
        for (const char of code.replace(/-/g, '')) counts.set(char, (counts.get(char) ?? 0) + 1);
      }
    }
    const total = [...counts.values()].reduce((sum, n) => sum + n, 0);
    const expected = total / ALPHABET.length;
    const chiSquare = [...ALPHABET].reduce(
      (sum, char) => sum + ((counts.get(char) ?? 0) - expected) ** 2 / expected,
      0,
    );
    expect(counts.size).toBe(36);
    expect(chiSquare).toBeLessThan(100);
  });
});

describe('normalizing what a person typed', () => {
  it.each([
    ['ABCD-EFGH-2345', 'ABCD-EFGH-2345'],
    ['  abcd-efgh-2345 ', 'ABCD-EFGH-2345'],
    ['ABCDEFGH2345', 'ABCD-EFGH-2345'],
    ['abcd efgh 2345', 'ABCD-EFGH-2345'],
  ])('reads "%s" as %s', (typed, code) => {
    expect(formatRecoveryCode(normalizeRecoveryCode(typed)!)).toBe(code);
  });

  it.each(['', 'ABCD-EFGH-234', 'ABCD-EFGH-23456', 'ABCD-EFGH-234!', 'ÄBCD-EFGH-2345'])('refuses "%s"', (typed) => {
    expect(normalizeRecoveryCode(typed)).toBeNull();
  });
});

describe('a user with stored recovery-code hashes', () => {
  const hasher = new RecoveryCodeHasher([key('r1')]);
  const codes = generateRecoveryCodes();
  const stored = codes.map((code) => hasher.hash('user-1', code));

  it('stores h1.<kid>.<64 hex digits>, never the code', () => {
    for (const [i, hash] of stored.entries()) {
      expect(hash).toMatch(/^h1\.r1\.[0-9a-f]{64}$/);
      expect(hash).not.toContain(codes[i]!.replace(/-/g, ''));
    }
  });

  it('finds the index of the code used, so the caller can consume exactly that one', () => {
    expect(hasher.verify('user-1', codes[7]!, stored)).toBe(7);
  });

  it('accepts the code typed in lowercase without dashes', () => {
    expect(hasher.verify('user-1', codes[3]!.toLowerCase().replace(/-/g, ''), stored)).toBe(3);
  });

  it("rejects a code that is not one of the user's", () => {
    let other = generateRecoveryCodes(1)[0]!;
    while (codes.includes(other)) other = generateRecoveryCodes(1)[0]!;
    expect(hasher.verify('user-1', other, stored)).toBe(-1);
  });

  it("rejects the user's code presented for another user (hashes are bound to the user)", () => {
    expect(hasher.verify('user-2', codes[0]!, stored)).toBe(-1);
  });

  it('hashes the same code differently for two users', () => {
    expect(hasher.hash('user-1', codes[0]!)).not.toBe(hasher.hash('user-2', codes[0]!));
  });

  it('rejects malformed input without throwing', () => {
    expect(hasher.verify('user-1', 'not a code', stored)).toBe(-1);
  });

  it('rejects every code once all were consumed', () => {
    expect(hasher.verify('user-1', codes[0]!, [])).toBe(-1);
  });

  it('ignores stored values that are not hashes of this format', () => {
    expect(hasher.verify('user-1', codes[0]!, ['garbage', `h1.r1.${'0'.repeat(64)}`, stored[0]!])).toBe(2);
  });

  it('does not verify with a hasher holding another key', () => {
    expect(new RecoveryCodeHasher([key('r1')]).verify('user-1', codes[0]!, stored)).toBe(-1);
  });
});

describe('recovery-code hashes during key rotation', () => {
  const oldKey = key('r1');
  const newKey = key('r2');
  const code = generateRecoveryCodes(1)[0]!;
  const oldHash = new RecoveryCodeHasher([oldKey]).hash('user-1', code);
  const rotated = new RecoveryCodeHasher([newKey, oldKey]);

  it('still verifies codes hashed under the old key', () => {
    expect(rotated.verify('user-1', code, [oldHash])).toBe(0);
  });

  it('hashes new codes under the new key', () => {
    expect(rotated.hash('user-1', code)).toMatch(/^h1\.r2\./);
  });

  it('no longer verifies them once the old key is removed', () => {
    expect(new RecoveryCodeHasher([newKey]).verify('user-1', code, [oldHash])).toBe(-1);
  });
});
