import { describe, expect, it } from 'vitest';
import {
  base32Decode,
  base32Encode,
  generateTotpSecret,
  hotp,
  otpauthUri,
  totpCode,
  totpCounter,
  verifyTotp,
} from '../../../infra/security/totp';

// RFC 6238 Appendix B: the SHA-1 seed is the ASCII string "12345678901234567890".
const RFC_SEED = Buffer.from('12345678901234567890', 'ascii');
const RFC_SHA1_VECTORS: [time: number, code8: string][] = [
  [59, '94287082'],
  [1111111109, '07081804'],
  [1111111111, '14050471'],
  [1234567890, '89005924'],
  [2000000000, '69279037'],
  [20000000000, '65353130'],
];

describe('the RFC 6238 Appendix B SHA-1 test vectors', () => {
  it.each(RFC_SHA1_VECTORS)('at T=%i the 8-digit code is %s', (time, code8) => {
    expect(totpCode(RFC_SEED, time, 8)).toBe(code8);
  });

  it.each(RFC_SHA1_VECTORS)('at T=%i the 6-digit code is the last six digits of %s', (time, code8) => {
    expect(totpCode(RFC_SEED, time)).toBe(code8.slice(2));
  });

  it('derive the counter as floor(T / 30)', () => {
    expect(totpCounter(59)).toBe(1);
    expect(totpCounter(1111111109)).toBe(0x23523ec);
  });
});

describe('RFC 4648 base32', () => {
  const vectors: [string, string][] = [
    ['', ''],
    ['f', 'MY======'],
    ['fo', 'MZXQ===='],
    ['foo', 'MZXW6==='],
    ['foob', 'MZXW6YQ='],
    ['fooba', 'MZXW6YTB'],
    ['foobar', 'MZXW6YTBOI======'],
  ];

  it.each(vectors)('encodes "%s" as %s with padding', (plain, encoded) => {
    expect(base32Encode(Buffer.from(plain), { padding: true })).toBe(encoded);
  });

  it.each(vectors)('decodes "%s" back from %s, padded or not', (plain, encoded) => {
    expect(Buffer.from(base32Decode(encoded)).toString()).toBe(plain);
    expect(Buffer.from(base32Decode(encoded.replace(/=/g, ''))).toString()).toBe(plain);
  });

  it('omits padding by default, as authenticator apps expect', () => {
    expect(base32Encode(Buffer.from('f'))).toBe('MY');
  });

  it('accepts lowercase and spaces typed by a person', () => {
    expect(Buffer.from(base32Decode('mzxw 6ytb oi')).toString()).toBe('foobar');
  });

  it('refuses characters outside the alphabet (0, 1, 8, 9 are not base32)', () => {
    expect(() => base32Decode('MZXW6YT1')).toThrow(/alphabet/);
  });

  it('refuses lengths no byte string can have', () => {
    expect(() => base32Decode('MZX')).toThrow(/length/);
  });

  it('refuses non-canonical trailing bits', () => {
    expect(() => base32Decode('MZ')).toThrow(/trailing bits/); // "MY" is the canonical form of "f"
  });
});

describe('a freshly generated TOTP secret', () => {
  it('is 160 random bits in unpadded base32', () => {
    const secret = generateTotpSecret();
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(base32Decode(secret)).toHaveLength(20);
  });

  it('differs on every call', () => {
    expect(new Set(Array.from({ length: 50 }, generateTotpSecret)).size).toBe(50);
  });
});

// Fixed secrets keep these tests deterministic: with random ones, two windows' codes collide once in a million runs.
const SECRET = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP';
const OTHER_SECRET = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ';

describe('verifying a code at a moment in the middle of a window', () => {
  const secret = SECRET;
  const now = 1_800_000_015; // 15 s into the window
  const current = totpCounter(now);

  it('accepts the current code and returns its counter', () => {
    expect(verifyTotp(secret, hotp(secret, current), now)).toBe(current);
  });

  it('accepts the code of the immediately preceding window and returns that counter', () => {
    expect(verifyTotp(secret, hotp(secret, current - 1), now)).toBe(current - 1);
  });

  it('rejects the code of the window before the preceding one', () => {
    expect(verifyTotp(secret, hotp(secret, current - 2), now)).toBeNull();
  });

  it('rejects the code of the next window', () => {
    expect(verifyTotp(secret, hotp(secret, current + 1), now)).toBeNull();
  });

  it('rejects a code made with another secret', () => {
    expect(verifyTotp(OTHER_SECRET, hotp(secret, current), now)).toBeNull();
  });

  it('accepts the code with the space apps display in the middle', () => {
    const code = hotp(secret, current);
    expect(verifyTotp(secret, `${code.slice(0, 3)} ${code.slice(3)}`, now)).toBe(current);
  });

  it.each(['', '12345', '1234567', 'abcdef', '12345a'])('rejects the malformed code "%s"', (code) => {
    expect(verifyTotp(secret, code, now)).toBeNull();
  });

  it('accepts the secret as bytes as well as base32', () => {
    expect(verifyTotp(base32Decode(secret), hotp(secret, current), now)).toBe(current);
  });

  it("returns the same counter when the same code is presented again, which is what the caller's replay rule keys on", () => {
    const code = hotp(secret, current);
    expect(verifyTotp(secret, code, now)).toBe(verifyTotp(secret, code, now + 5));
  });
});

describe('verifying at the first second of a window', () => {
  const secret = SECRET;
  const now = 1_800_000_030;
  const current = totpCounter(now);

  it('still accepts the code that was shown one second earlier', () => {
    expect(verifyTotp(secret, totpCode(secret, now - 1), now)).toBe(current - 1);
  });

  it('no longer accepts a code from 31 s earlier', () => {
    expect(verifyTotp(secret, totpCode(secret, now - 31), now)).toBeNull();
  });
});

describe('a secret shorter than 128 bits', () => {
  it('is refused, as RFC 4226 requires', () => {
    expect(() => hotp(Buffer.alloc(10), 0)).toThrow(RangeError);
  });
});

describe('the otpauth URI', () => {
  it('carries label, secret, issuer and the fixed parameters', () => {
    const uri = otpauthUri({ issuer: 'Acme Cloud', account: 'ann+mfa@example.com', secretBase32: 'JBSWY3DPEHPK3PXP' });
    expect(uri).toBe(
      'otpauth://totp/Acme%20Cloud:ann%2Bmfa%40example.com?secret=JBSWY3DPEHPK3PXP&issuer=Acme%20Cloud&algorithm=SHA1&digits=6&period=30',
    );
  });

  it('refuses a colon in the issuer or account, which apps use to split the label', () => {
    expect(() => otpauthUri({ issuer: 'a:b', account: 'x', secretBase32: 'JBSWY3DPEHPK3PXP' })).toThrow(/colon/);
    expect(() => otpauthUri({ issuer: 'a', account: 'x:y', secretBase32: 'JBSWY3DPEHPK3PXP' })).toThrow(/colon/);
  });

  it('refuses a secret that is not base32', () => {
    expect(() => otpauthUri({ issuer: 'a', account: 'x', secretBase32: 'not-base32!' })).toThrow();
  });
});
