/**
 * The split topology's role processes (tests/support/role-server.ts) and its ClickHouse endpoint
 * (clickhouse-server.ts), each from one JavaScript file.
 *
 * Started through tsx, a role spends most of its start compiling and resolving several hundred
 * TypeScript modules through the loader hooks (measured: ~5 s of CPU per role, four roles per split
 * suite, 40-odd suites). Bundled once per vitest run (globalSetup), a role loads one file and
 * only node_modules through Node's own loader, as the image runs the platform (scripts/bundle.ts).
 * Set PLATFORM_TEST_ROLES_FROM_SOURCE=1 to start them through tsx instead (stack traces with
 * TypeScript lines); a test file run without the globalSetup does the same.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundlePrograms, INSTRUMENT_SOURCE } from '../../scripts/bundle';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BUNDLE_DIR_ENV = 'PLATFORM_TEST_BUNDLE_DIR';

/** the programs of tests/support/ that tests start as processes of their own */
export type TestProgram = 'role-server' | 'clickhouse-server' | 'service-server';

/** bundles each test program into a file of its own in folder (node_modules stay imports), and the tracing preload */
export const buildTestPrograms = (folder: string): Promise<void> =>
  bundlePrograms(
    {
      ...Object.fromEntries(
        (['role-server', 'clickhouse-server', 'service-server'] satisfies TestProgram[]).map((p) => [
          p,
          join(ROOT, `tests/support/${p}.ts`),
        ]),
      ),
      instrument: fileURLToPath(INSTRUMENT_SOURCE),
    },
    folder,
  );

/**
 * the arguments of `node` that start a test program: its bundle when the run built one, else its
 * source through tsx; preceded, as the image's platform is, by the tracing preload (it does nothing
 * unless OTEL_EXPORTER_OTLP_ENDPOINT is set)
 */
export const testProgramArgs = (program: TestProgram): string[] => {
  const folder = process.env[BUNDLE_DIR_ENV];
  return folder
    ? ['--enable-source-maps', '--import', join(folder, 'instrument.mjs'), join(folder, `${program}.mjs`)]
    : ['--import', 'tsx', '--import', fileURLToPath(INSTRUMENT_SOURCE), `tests/support/${program}.ts`];
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
