import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import type { Resolver, ResolvedAddress } from '../../infra/security/outbound';

/**
 * A DNS a test writes: the names it knows answer what the test set (a private address, a
 * metadata address, one answer at registration and another at delivery), every other name does
 * not resolve — a test never asks the machine's resolver (it sits on a private address, and this
 * workplace flags any packet beyond loopback). The platform's outbound guard resolves through it
 * (startTestPlatform({ resolver })); in the split topology shareThrough(file) mirrors the table
 * into a file every role reads on each lookup (fileResolver), so a change reaches them at once.
 */
export interface TestResolver {
  resolver: Resolver;
  /** what `name` answers from now on; [] makes it not resolve */
  set(name: string, addresses: string[]): void;
  /** mirrors the table into this file from now on (tests/support/split.ts) */
  shareThrough(path: string): void;
}

type Table = Record<string, string[]>;

const answer = (table: Table, hostname: string): ResolvedAddress[] => {
  const addresses = table[hostname.toLowerCase()] ?? [];
  if (addresses.length === 0)
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname });
  return addresses.map((address) => ({ address, family: isIPv6(address) ? 6 : 4 }));
};

export const testResolver = (initial: Table = {}): TestResolver => {
  const table: Table = Object.fromEntries(Object.entries(initial).map(([k, v]) => [k.toLowerCase(), v]));
  const files: string[] = [];
  const publish = () => {
    // rename is atomic: a role reads the old table or the new one, never half a file
    for (const file of files) {
      writeFileSync(`${file}.next`, JSON.stringify(table));
      renameSync(`${file}.next`, file);
    }
  };
  return {
    resolver: async (hostname) => answer(table, hostname),
    set: (name, addresses) => {
      table[name.toLowerCase()] = addresses;
      publish();
    },
    shareThrough: (path) => {
      files.push(path);
      publish();
    },
  };
};

/** the resolver of a role process of the split topology: the table the test shares through the file */
export const fileResolver =
  (path: string): Resolver =>
  async (hostname) =>
    answer(JSON.parse(readFileSync(path, 'utf8')) as Table, hostname);
