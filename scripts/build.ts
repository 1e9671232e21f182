/**
 * `npm run build`: the `platform` command as one JavaScript file, dist/platform.mjs, which the
 * image runs (`node --import ./dist/instrument.mjs dist/platform.mjs <command>`): no TypeScript is compiled at start. It reads
 * its migrations and protos from the source tree beside it (scripts/bundle.ts), so it runs from
 * the checkout it was built in, or from an image holding the same tree at the same path.
 */
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { bundlePlatform } from './bundle';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = join(root, 'dist');
const started = Date.now();
console.log('[build] bundling app/cli/main.ts into dist/platform.mjs and its tracing preload into dist/instrument.mjs');
rmSync(out, { recursive: true, force: true });
await bundlePlatform(out);
console.log(`[build] done in ${Date.now() - started} ms`);
