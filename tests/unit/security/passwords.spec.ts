import argon2 from 'argon2';
import { describe, expect, it } from 'vitest';
import { breachedPasswords, isBreachedPassword } from '../../../infra/security/breached-passwords';
import {
  checkPasswordPolicy,
  DUMMY_PASSWORD_HASH,
  dummyVerify,
  hashPassword,
  PASSWORD_HASH_PARAMS,
  verifyPassword,
} from '../../../infra/security/passwords';

const codes = (password: string) => checkPasswordPolicy(password).map((e) => e.code);

describe('a password hashed with the current parameters', () => {
  const password = 'correct horse battery staple';
  const hashed = hashPassword(password);

  it('is an argon2id PHC string with the OWASP parameters (19 MiB, t=2, p=1)', async () => {
    expect(await hashed).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/);
  });

  it('uses a fresh salt each time', async () => {
    expect(await hashPassword(password)).not.toBe(await hashed);
  });

  it('verifies with the right password and needs no rehash', async () => {
    expect(await verifyPassword(await hashed, password)).toEqual({ ok: true, needsRehash: false });
  });

  it('does not verify with a wrong password', async () => {
    expect(await verifyPassword(await hashed, 'correct horse battery stapler')).toEqual({
      ok: false,
      needsRehash: false,
    });
  });

  it('is case-sensitive', async () => {
    expect((await verifyPassword(await hashed, password.toUpperCase())).ok).toBe(false);
  });
});

describe('a password stored under older parameters', () => {
  const password = 'an older account password';

  it('verifies and asks for a rehash when the costs differ', async () => {
    const old = await argon2.hash(password, { type: argon2.argon2id, memoryCost: 8192, timeCost: 3, parallelism: 1 });
    expect(await verifyPassword(old, password)).toEqual({ ok: true, needsRehash: true });
  });

  it('verifies and asks for a rehash when the variant is argon2i', async () => {
    const old = await argon2.hash(password, { ...PASSWORD_HASH_PARAMS, type: argon2.argon2i });
    expect(await verifyPassword(old, password)).toEqual({ ok: true, needsRehash: true });
  });

  it('asks for no rehash when the password is wrong (nothing to rehash with)', async () => {
    const old = await argon2.hash(password, { type: argon2.argon2id, memoryCost: 8192, timeCost: 3, parallelism: 1 });
    expect(await verifyPassword(old, 'not it at all')).toEqual({ ok: false, needsRehash: false });
  });
});

describe('a password typed in another Unicode form', () => {
  it('verifies: "é" composed and "e" + combining accent are the same password after NFKC', async () => {
    const composed = 'caf\u00e9 au lait du matin';
    const decomposed = 'cafe\u0301 au lait du matin';
    expect(composed).not.toBe(decomposed);
    expect((await verifyPassword(await hashPassword(composed), decomposed)).ok).toBe(true);
  });
});

describe('a stored value that is not an argon2 hash', () => {
  it('throws instead of reading as a wrong password', async () => {
    await expect(verifyPassword('plaintext-in-the-column', 'whatever')).rejects.toThrow();
  });
});

describe('the dummy verification for unknown emails', () => {
  it('uses a hash with exactly the current parameters, so it costs what a real verification costs', () => {
    expect(DUMMY_PASSWORD_HASH.startsWith('$argon2id$')).toBe(true);
    expect(argon2.needsRehash(DUMMY_PASSWORD_HASH, PASSWORD_HASH_PARAMS)).toBe(false);
  });

  it('completes for any input and reveals nothing', async () => {
    await expect(dummyVerify('some guess')).resolves.toBeUndefined();
    await expect(dummyVerify()).resolves.toBeUndefined();
  });
});

describe('the password policy', () => {
  it('accepts a 12-character password that is not in the list', () => {
    expect(checkPasswordPolicy('vX9#qL2!mR7p')).toEqual([]);
  });

  it('refuses 11 characters as TOO_SHORT on the password field', () => {
    expect(checkPasswordPolicy('vX9#qL2!mR7')).toEqual([
      { field: 'password', code: 'TOO_SHORT', message: expect.stringMatching(/12/) },
    ]);
  });

  it('accepts 128 characters and refuses 129 as TOO_LONG', () => {
    expect(codes('a1'.repeat(64))).toEqual([]);
    expect(codes(`${'a1'.repeat(64)}b`)).toEqual(['TOO_LONG']);
  });

  it('counts characters, not UTF-16 units: six emoji are six characters', () => {
    const sixEmoji = '🔐🔑🗝️🛡️🧱🚪'.replace(/\uFE0F/g, '');
    expect(sixEmoji.length).toBe(12);
    expect(codes(sixEmoji)).toEqual(['TOO_SHORT']);
  });

  it('refuses a 12+ character password from the breached list as BREACHED_PASSWORD', () => {
    expect(codes('passwordpassword')).toEqual(['BREACHED_PASSWORD']);
    expect(codes('qwertyuiopasdfghjkl')).toEqual(['BREACHED_PASSWORD']);
  });

  it('matches the list case-insensitively', () => {
    expect(codes('PassWordPassWord')).toEqual(['BREACHED_PASSWORD']);
    expect(codes('1QAZ2WSX3EDC')).toEqual(['BREACHED_PASSWORD']);
  });

  it('reports both rules for a short breached password', () => {
    expect(codes('password')).toEqual(['TOO_SHORT', 'BREACHED_PASSWORD']);
  });
});

describe('the shipped breached-password list', () => {
  const list = breachedPasswords();

  it('holds 100,000 lowercase entries of at most 128 characters', () => {
    expect(list.size).toBe(100_000);
    const misfits = [...list].filter(
      (entry) => entry !== entry.toLowerCase() || entry.length === 0 || entry.length > 128,
    );
    expect(misfits).toEqual([]);
  });

  it('holds every 12+ character entry of the source (tens of thousands), the only ones the length rule lets through', () => {
    const long = [...list].filter((entry) => entry.length >= 12).length;
    expect(long).toBeGreaterThan(40_000);
  });

  it('holds the most common passwords', () => {
    for (const common of ['123456', 'password', 'qwerty', 'iloveyou', 'dragon'])
      expect(isBreachedPassword(common)).toBe(true);
  });

  it('is loaded once and shared', () => {
    expect(breachedPasswords()).toBe(list);
  });
});
