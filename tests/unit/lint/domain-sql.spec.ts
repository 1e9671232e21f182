import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/*
 * domain/ is the pure core (DESIGN.md mechanism 6): deciders, shapes, catalogs of errors — no I/O,
 * and so no SQL either. A statement written there is a query some layer runs, and belongs beside
 * the code that runs it (commands/<ctx>/, projections/<ctx>/queries.ts, infra/). The lint cannot
 * see a string's contents, so this test reads every file of domain/ and refuses the statements.
 */
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/** the start of an SQL statement or a catalog read, as the platform writes them (keywords in upper case) */
const SQL =
  /\b(SELECT\s|INSERT\s+INTO\b|DELETE\s+FROM\b|UPDATE\s+[\w."${}]+\s+SET\b|(CREATE|ALTER|DROP)\s+(TABLE|INDEX|SCHEMA|ROLE|POLICY)\b|TRUNCATE\s)|set_config\(|information_schema\.|pg_catalog\./;

const filesOf = async (dir: string): Promise<string[]> =>
  (await readdir(dir, { withFileTypes: true, recursive: true }))
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(e.parentPath, e.name));

/** the lines of `text` that hold SQL, as `line: text` */
const sqlLines = (text: string): string[] =>
  text.split('\n').flatMap((line, i) => (SQL.test(line) ? [`${i + 1}: ${line.trim()}`] : []));

describe('domain/ holds no SQL', () => {
  it('finds the statements it looks for (the check can fail)', () => {
    expect(sqlLines("export const Q = 'SELECT id FROM rm.modules WHERE tenant_id = $1';")).toHaveLength(1);
    expect(sqlLines('const t = `UPDATE ${table} SET "a" = $3`;')).toHaveLength(1);
    expect(
      sqlLines('q(`DELETE FROM x`); q(`INSERT INTO x VALUES (1)`); q("SELECT set_config(\'a\', $1, true)")'),
    ).toHaveLength(1);
    expect(sqlLines('/** the selected plan: update the subscription, then delete the pending one */')).toEqual([]);
  });

  it('no file of domain/ writes a statement', async () => {
    const found: string[] = [];
    for (const file of await filesOf(join(ROOT, 'domain')))
      for (const line of sqlLines(await readFile(file, 'utf8'))) found.push(`${relative(ROOT, file)}:${line}`);
    expect(found, found.join('\n')).toEqual([]);
  });
});
