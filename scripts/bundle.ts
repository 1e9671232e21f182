/**
 * One JavaScript file per program, from the TypeScript source (esbuild): the image's `platform`
 * (scripts/build.ts) and the test programs the split topology starts (tests/support/test-programs.ts).
 * Packages stay imports, resolved from node_modules at run time (native ones included). Each
 * module's `import.meta.url` becomes its own source file's URL, so what a module reads beside
 * itself (migrations, protos, fixtures) is found where it lies in the checkout — the bundle runs
 * next to the source tree it was built from.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';

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

/**
 * the `platform` command (app/cli/main.ts) as outdir/platform.mjs, and the tracing preload
 * (infra/observability/instrument.ts) as outdir/instrument.mjs, run before it with `node --import`:
 * what `npm run build` makes and the image runs
 */
export const bundlePlatform = (outdir: string): Promise<void> =>
  bundlePrograms(
    {
      platform: fileURLToPath(new URL('../app/cli/main.ts', import.meta.url)),
      instrument: fileURLToPath(INSTRUMENT_SOURCE),
    },
    outdir,
  );

/** the tracing preload's source: it must run before every other module of a platform process */
export const INSTRUMENT_SOURCE = new URL('../infra/observability/instrument.ts', import.meta.url);

/**
 * bundles each entry point into outdir/<its name>.mjs (a list: the source file's name; a record:
 * its key), with a linked source map (run node with --enable-source-maps)
 */
export const bundlePrograms = async (entryPoints: string[] | Record<string, string>, outdir: string): Promise<void> => {
  await build({
    entryPoints,
    outdir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    // the oldest Node the platform supports (package.json engines)
    target: 'node20',
    packages: 'external',
    plugins: [ownImportMetaUrl],
    sourcemap: 'linked',
    logLevel: 'error',
  });
};
