import { readdir, readFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/*
 * One directory of people (docs/kernel.md, "The directory of people"): identity's read models
 * (rm.iam_*) are named by identity alone — its commands, projections, APIs, workers, runtime and
 * migrations — and by tests, which seed them. Every other context asks kernel.people, so renaming an
 * identity table breaks no other context. This scans the source tree for the name.
 */
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const SKIPPED = new Set(['node_modules', '.git', '.data', '.test-infra', '.cache', '.scratch', 'coverage', 'dist']);
const SOURCE = /\.(ts|js|mjs|cjs|sql)$/;
const IDENTITY_TABLE = /\brm\.iam_/;

/** identity's own files: a folder named identity, or identity's migrations (01xx_identity_*.sql) */
const isIdentitys = (path: string): boolean =>
  path.split('/').includes('identity') || /(^|\/)\d+_identity_[^/]*\.sql$/.test(path);

/** the files, of those given (paths relative to the root, with `/`), that name identity's tables without being identity's or a test */
export const strangersNamingIdentityTables = (files: readonly { path: string; text: string }[]): string[] =>
  files
    .filter((f) => !f.path.startsWith('tests/') && !isIdentitys(f.path) && IDENTITY_TABLE.test(f.text))
    .map((f) => f.path);

const sources = async (dir: string): Promise<string[]> => {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (SKIPPED.has(entry.name) || entry.isSymbolicLink()) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...(await sources(path)));
    else if (SOURCE.test(entry.name)) found.push(path);
  }
  return found;
};

describe('the directory of people', () => {
  it('given a file of another context naming rm.iam_members, when scanned, then it is named; identity and tests are not', () => {
    const offenders = strangersNamingIdentityTables([
      { path: 'commands/money/lookups.ts', text: "q.query('SELECT 1 FROM rm.iam_members WHERE tenant_id = $1')" },
      { path: 'projections/billing/queries.ts', text: '`SELECT 1 FROM rm.iam_tenants`' },
      { path: 'infra/postgres/migrations/0450_billing_x.sql', text: 'SELECT * FROM rm.iam_accounts;' },
      { path: 'commands/identity/people.ts', text: "q.query('SELECT 1 FROM rm.iam_members')" },
      { path: 'projections/identity/shared/runtime.ts', text: "q.query('SELECT 1 FROM rm.iam_roles')" },
      { path: 'infra/postgres/migrations/0120_identity_x.sql', text: 'SELECT * FROM rm.iam_accounts;' },
      { path: 'tests/support/money.ts', text: 'INSERT INTO rm.iam_members' },
      { path: 'commands/notify/lookups.ts', text: 'kernel.people.addresses(q, tenantId, userIds)' },
    ]);
    expect(offenders).toEqual([
      'commands/money/lookups.ts',
      'projections/billing/queries.ts',
      'infra/postgres/migrations/0450_billing_x.sql',
    ]);
  });

  it('given the source tree, when scanned, then no file outside identity and the tests names an rm.iam_ table', async () => {
    const paths = await sources(ROOT);
    expect(paths.length).toBeGreaterThan(100);
    const files = await Promise.all(
      paths.map(async (path) => ({
        path: relative(ROOT, path).split(sep).join('/'),
        text: await readFile(path, 'utf8'),
      })),
    );
    expect(strangersNamingIdentityTables(files)).toEqual([]);
  });
});
