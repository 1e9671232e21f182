import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/*
 * app/services.ts names every service piece one by one: a context's index.ts that is not named
 * there is never run (nothing discovers it any more), so this test lists the folders and compares.
 */
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const LAYERS = ['write-api', 'read-api', 'projections', 'workers'] as const;

const indexes = (layer: string): string[] =>
  readdirSync(join(ROOT, layer))
    .filter((name) => statSync(join(ROOT, layer, name)).isDirectory())
    .filter((name) => {
      try {
        return statSync(join(ROOT, layer, name, 'index.ts')).isFile();
      } catch {
        return false;
      }
    })
    .map((name) => `../${layer}/${name}`)
    .sort();

describe('the service registry (app/services.ts)', () => {
  it('given every context folder with an index.ts, names each one, and nothing else', () => {
    const source = readFileSync(join(ROOT, 'app/services.ts'), 'utf8');
    const named = [...source.matchAll(/import\('(\.\.\/(?:write-api|read-api|projections|workers)\/[^']+)'\)/g)]
      .map((m) => m[1]!)
      .sort();
    expect(named).toEqual(LAYERS.flatMap(indexes).sort());
  });
});
