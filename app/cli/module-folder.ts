import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Manifest } from '../../domain/modules/manifest';

/**
 * A module as it lives in a folder (modules/crm): manifest.json, and migrations/NNNN_<name>.sql,
 * numbered from 0001 in order. The CLI turns it into the manifest the registry takes (migrations
 * inline), so `platform modules register modules/crm` and POST /v1/modules register the same thing.
 */
export const readModuleFolder = async (dir: string): Promise<Manifest> => {
  const raw = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as Record<string, unknown>;
  const files = (await readdir(join(dir, 'migrations')).catch(() => [] as string[]))
    .filter((f) => /^\d{4}_.+\.sql$/.test(f))
    .sort();
  const migrations = await Promise.all(
    files.map(async (f) => ({
      version: Number(f.slice(0, 4)),
      name: f.slice(5, -4),
      sql: await readFile(join(dir, 'migrations', f), 'utf8'),
    })),
  );
  return Manifest.parse({ ...raw, migrations });
};
