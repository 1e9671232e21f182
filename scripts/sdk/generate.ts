/**
 * `npm run sdk:generate`: the typed SDK's generated files (sdk/src/generated/), from the OpenAPI
 * documents the platform serves, built in this process without any engine (scripts/sdk/documents.ts).
 * Files of that folder the platform no longer has a document for are removed. The drift test
 * (tests/unit/sdk/drift.spec.ts) fails while the committed files differ from what this writes.
 */
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GENERATED_DIR, ROOT, sdkSources } from './sources';

const started = Date.now();
const files = await sdkSources();
await mkdir(join(ROOT, GENERATED_DIR), { recursive: true });
for (const name of await readdir(join(ROOT, GENERATED_DIR))) {
  if (!files.has(`${GENERATED_DIR}/${name}`)) {
    await rm(join(ROOT, GENERATED_DIR, name));
    console.log(`[sdk] removed ${GENERATED_DIR}/${name}`);
  }
}
for (const [file, source] of files) await writeFile(join(ROOT, file), source);
console.log(`[sdk] wrote ${files.size} files in ${GENERATED_DIR}/ in ${Date.now() - started} ms`);
