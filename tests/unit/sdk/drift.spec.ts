import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GENERATE_COMMAND, GENERATED_DIR, ROOT, sdkSources } from '../../../scripts/sdk/sources';

/**
 * The typed SDK (sdk/) is generated from the OpenAPI documents the platform serves; the generated
 * files are committed. This test generates them again in memory (no engine: scripts/sdk/documents.ts)
 * and compares, so a route whose schema changed without the SDK fails here, not in a client.
 */
describe('the typed SDK', () => {
  it('given the routes as they are, has the generated files the documents give, byte for byte', async () => {
    const expected = await sdkSources();
    const committed = (await readdir(join(ROOT, GENERATED_DIR)).catch(() => [] as string[])).map(
      (name) => `${GENERATED_DIR}/${name}`,
    );
    const differences = [
      ...committed.filter((file) => !expected.has(file)).map((file) => `${file}: no longer generated`),
      ...(await Promise.all(
        [...expected].map(async ([file, source]) => {
          const onDisk = await readFile(join(ROOT, file), 'utf8').catch(() => null);
          if (onDisk === null) return `${file}: missing`;
          return onDisk === source ? null : `${file}: ${firstDifference(onDisk, source)}`;
        }),
      )),
    ].filter((d) => d !== null);
    // one message naming each file and its first differing line: a diff of 100 kB files says less
    if (differences.length)
      expect.fail(
        `The typed SDK is out of date with the platform's OpenAPI documents: run \`${GENERATE_COMMAND}\` and commit the result.\n${differences.join('\n')}`,
      );
  }, 120_000); // the platform's modules load and nine documents are generated and formatted
});

const firstDifference = (committed: string, generated: string): string => {
  const c = committed.split('\n');
  const g = generated.split('\n');
  const i = c.findIndex((line, n) => line !== g[n]);
  const at = i < 0 ? c.length : i;
  return `line ${at + 1} is ${JSON.stringify(c[at] ?? '(end of file)')}, generated ${JSON.stringify(g[at] ?? '(end of file)')}`;
};
