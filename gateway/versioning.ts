import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { commonErrors } from '../domain/shared/errors';

/** docs/api-snapshots/v{N}/<namespace>.json: the OpenAPI documents of deprecated versions, never rewritten */
export const SNAPSHOT_DIR = fileURLToPath(new URL('../docs/api-snapshots', import.meta.url));

const VERSION = /^v(\d+)$/;
const NAMESPACE = /^[a-z][a-z0-9-]*$/;

/**
 * Freezes the OpenAPI documents of a version: one file per namespace. A file that exists is
 * left as it is (immutable snapshot); returns the namespaces written now.
 */
export const writeSnapshot = async (
  version: string,
  documents: Record<string, unknown>,
  dir = SNAPSHOT_DIR,
): Promise<string[]> => {
  if (!VERSION.test(version)) throw new Error(`a version is v<N>, got ${version}`);
  await mkdir(join(dir, version), { recursive: true });
  const written: string[] = [];
  for (const [namespace, doc] of Object.entries(documents)) {
    if (!NAMESPACE.test(namespace)) throw new Error(`not a namespace: ${namespace}`);
    const done = await writeFile(join(dir, version, `${namespace}.json`), `${JSON.stringify(doc, null, 2)}\n`, {
      flag: 'wx',
    }).then(
      () => true,
      (e: NodeJS.ErrnoException) => {
        if (e.code === 'EEXIST') return false;
        throw e;
      },
    );
    if (done) written.push(namespace);
  }
  return written;
};

export const isVersion = (segment: string): boolean => VERSION.test(segment);

/** the snapshot documents of a version (namespace and address), or null when the version has none */
export const snapshotIndex = async (
  version: string,
  dir = SNAPSHOT_DIR,
): Promise<{ namespace: string; url: string }[] | null> => {
  if (!VERSION.test(version)) return null;
  const files = await readdir(join(dir, version)).catch(() => null);
  if (!files) return null;
  return files
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => ({ namespace: f.slice(0, -5), url: `/api-docs/${version}/${f}` }));
};

/** GET /api-docs/v{N}/<namespace>.json: one snapshot document as stored, cacheable for a year */
export const registerSnapshots = (app: FastifyInstance, dir = SNAPSHOT_DIR): void => {
  app.get(
    '/api-docs/:version/:document',
    { config: { access: 'public' }, schema: { hide: true } },
    async (request, reply) => {
      const { version, document } = request.params as { version: string; document: string };
      const index = await snapshotIndex(version, dir);
      const entry = index?.find((d) => `${d.namespace}.json` === document);
      if (!entry) throw commonErrors.notFound(`There is no snapshot document ${version}/${document}.`);
      const body = await readFile(join(dir, version, document));
      return reply
        .type('application/json; charset=utf-8')
        .header('Cache-Control', 'public, max-age=31536000, immutable')
        .send(body);
    },
  );
};

const httpDate = (value: string): string => new Date(Date.parse(value)).toUTCString();

/**
 * Deprecation (RFC 9745, `@<unix seconds>`) and Sunset (RFC 8594, an HTTP-date) headers of the
 * current version, when API_DEPRECATION / API_SUNSET are configured.
 */
export const versionHeaders = (config: { API_DEPRECATION?: string; API_SUNSET?: string }): Record<string, string> => ({
  ...(config.API_DEPRECATION ? { Deprecation: `@${Math.floor(Date.parse(config.API_DEPRECATION) / 1000)}` } : {}),
  ...(config.API_SUNSET ? { Sunset: httpDate(config.API_SUNSET) } : {}),
});
