/**
 * The breached-password list shipped in data/breached-passwords.txt.gz (100,000 lowercase
 * entries; provenance and selection in scripts/build-breached-list.ts). It is read once, on first
 * use, into a Set: about 80 ms and 6 MiB of heap on the 2-core build machine, so the process pays it
 * at most once and preloadBreachedPasswords() lets a server pay it at start-up instead of in the
 * first registration request.
 */
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';

const LIST_FILE = new URL('./data/breached-passwords.txt.gz', import.meta.url);

let list: ReadonlySet<string> | undefined;

const load = (): ReadonlySet<string> => {
  const text = gunzipSync(readFileSync(LIST_FILE)).toString('utf8');
  return new Set(text.split('\n').filter((line) => line.length > 0));
};

export const breachedPasswords = (): ReadonlySet<string> => (list ??= load());

export const preloadBreachedPasswords = (): number => breachedPasswords().size;

/** Case-insensitive: the list is lowercase, and "Password123!" is no stronger than "password123!". */
export const isBreachedPassword = (password: string): boolean => breachedPasswords().has(password.toLowerCase());
