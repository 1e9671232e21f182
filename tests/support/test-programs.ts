/**
 * The split topology's role processes (tests/support/role-server.ts) and its ClickHouse endpoint
 * (clickhouse-server.ts), each from one JavaScript file.
 *
 * Started through tsx, a role spends most of its start compiling and resolving several hundred
 * TypeScript modules through the loader hooks (measured: ~5 s of CPU per role, four roles per split
 * suite, 40-odd suites). Bundled once per vitest run (globalSetup), a role loads one file and
 * only node_modules through Node's own loader. The bundle is the same source: each module's
 * `import.meta.url` is its own file's URL, so paths it reads beside itself (migrations, protos,
 * fixtures) resolve as they do from source. Set PLATFORM_TEST_ROLES_FROM_SOURCE=1 to start them
 * through tsx instead (stack traces with TypeScript lines); a test file run without the globalSetup
 * does the same.
 */
import { readFile } from 'node:fs/promises';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BUNDLE_DIR_ENV = 'PLATFORM_TEST_BUNDLE_DIR';

/** the programs of tests/support/ that tests start as processes of their own */
export type TestProgram = 'role-server' | 'clickhouse-server' | 'service-server';

/** every `import.meta.url` of a module becomes that module's own file URL */
const ownImportMetaUrl: Plugin = {
  name: 'own-import-meta-url',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      return {
        contents: source.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href)),
        loader: 'ts',
      };
    });
  },
};

/** bundles each test program into a file of its own in folder (node_modules stay imports) */
export const buildTestPrograms = async (folder: string): Promise<void> => {
  await build({
    entryPoints: (['role-server', 'clickhouse-server', 'service-server'] satisfies TestProgram[]).map((p) =>
      join(ROOT, `tests/support/${p}.ts`),
    ),
    outdir: folder,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    plugins: [ownImportMetaUrl],
    // stack traces name the TypeScript source (roles run with --enable-source-maps)
    sourcemap: 'linked',
    logLevel: 'error',
  });
};

/** the arguments of `node` that start a test program: its bundle when the run built one, else its source through tsx */
export const testProgramArgs = (program: TestProgram): string[] => {
  const folder = process.env[BUNDLE_DIR_ENV];
  return folder
    ? ['--enable-source-maps', join(folder, `${program}.mjs`)]
    : ['--import', 'tsx', `tests/support/${program}.ts`];
};

/** vitest globalSetup: one bundle for the run, named to the test files through the environment */
export default async function setup(): Promise<() => void> {
  if (process.env.PLATFORM_TEST_ROLES_FROM_SOURCE === '1') return () => undefined;
  // inside the checkout: the bundle's imports of packages resolve from its node_modules
  mkdirSync(join(ROOT, '.test-infra'), { recursive: true });
  const folder = mkdtempSync(join(ROOT, '.test-infra', 'roles-'));
  await buildTestPrograms(folder);
  process.env[BUNDLE_DIR_ENV] = folder;
  return () => rmSync(folder, { recursive: true, force: true });
}
