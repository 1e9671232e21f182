/**
 * Freezes the OpenAPI documents of a version before it is deprecated:
 *   npx tsx gateway/snapshot-cli.ts v1 [root url, default http://127.0.0.1:8080]
 * fetches /api/v1/<namespace>/openapi.json of a running platform for every namespace and writes
 * docs/api-snapshots/v1/<namespace>.json; files that exist are left alone (immutable snapshots).
 * A namespace no installed service serves (404) has no document and is skipped.
 */
import { NAMESPACES } from './docs';
import { writeSnapshot } from './versioning';

const [version, root = 'http://127.0.0.1:8080'] = process.argv.slice(2);
if (!version || !/^v\d+$/.test(version)) {
  console.error('usage: npx tsx gateway/snapshot-cli.ts v<N> [root url]');
  process.exit(2);
}
const documents: Record<string, unknown> = {};
for (const namespace of NAMESPACES) {
  const res = await fetch(`${root}/api/${version}/${namespace}/openapi.json`);
  if (res.status === 404) continue;
  if (!res.ok) throw new Error(`${namespace}: ${res.status} ${await res.text()}`);
  documents[namespace] = await res.json();
}
const written = await writeSnapshot(version, documents);
process.stdout.write(
  `${written.length ? `wrote ${written.join(', ')}` : 'every document of this version was already frozen'}\n`,
);
