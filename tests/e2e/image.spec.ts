import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundlePlatform } from '../../scripts/bundle';
import { freePort, waitFor } from '../support/process';

/**
 * The image, without a Docker engine: its Dockerfile read as Docker reads it, and its program — the
 * bundle `npm run build` makes — started with the final stage's environment as an unprivileged
 * user in a source tree that user cannot write (as the image's /app, owned by root). The shipped
 * image once failed at start with EACCES mkdir /app/.data.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NOBODY = 65534;
const asRoot = userInfo().uid === 0;

interface Instruction {
  op: string;
  args: string;
}
/** the Dockerfile's instructions (continuation lines joined, comments dropped), by stage */
const stagesOf = (text: string): Instruction[][] => {
  const lines = text.replace(/\\\n/g, ' ').split('\n');
  const stages: Instruction[][] = [];
  for (const line of lines) {
    const m = /^\s*([A-Z]+)\s+(.*)$/.exec(line);
    if (!m || line.trimStart().startsWith('#')) continue;
    if (m[1] === 'FROM') stages.push([]);
    stages.at(-1)?.push({ op: m[1]!, args: m[2]!.trim() });
  }
  return stages;
};
const argsOf = (stage: Instruction[], op: string) => stage.filter((i) => i.op === op).map((i) => i.args);
const envOf = (stage: Instruction[]): Record<string, string> =>
  Object.fromEntries(
    argsOf(stage, 'ENV').flatMap((args) =>
      [...args.matchAll(/([A-Z_][A-Z0-9_]*)=("[^"]*"|\S+)/g)].map((m) => [m[1]!, m[2]!.replace(/^"|"$/g, '')]),
    ),
  );

const stages = stagesOf(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
const final = stages.at(-1)!;
const env = envOf(final);
let bundleDir: string;
let dataDir: string;

beforeAll(async () => {
  // inside the checkout, as dist/ is: the bundle's packages resolve from its node_modules
  mkdirSync(join(ROOT, '.test-infra'), { recursive: true });
  bundleDir = mkdtempSync(join(ROOT, '.test-infra', 'image-'));
  chmodSync(bundleDir, 0o755); // the image's files are readable by its user
  await bundlePlatform(bundleDir);
  dataDir = mkdtempSync(join(tmpdir(), 'image-data-'));
  if (asRoot) chownSync(dataDir, NOBODY, NOBODY);
});
afterAll(() => {
  rmSync(bundleDir, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

/** the bundle with the image's environment (and these changes), as nobody when the test runs as root */
const runBundle = (changes: Record<string, string | undefined>, port: number) => {
  const vars = { ...env, HOST: '127.0.0.1', PORT: String(port), GRPC_PORT: '0', HTTP_WORKERS: '1', ...changes };
  const command = [
    process.execPath,
    '--enable-source-maps',
    '--import',
    join(bundleDir, 'instrument.mjs'),
    join(bundleDir, 'platform.mjs'),
    'start',
  ];
  const child = spawn(
    asRoot ? 'setpriv' : command[0]!,
    asRoot ? [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', ...command] : command.slice(1),
    {
      // the image's WORKDIR: a tree its user cannot write
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        ...Object.fromEntries(Object.entries(vars).filter((e): e is [string, string] => e[1] !== undefined)),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
};

describe('the Dockerfile', () => {
  it('bundles the platform in a build stage and runs the bundle, not the TypeScript', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(stages.slice(0, -1).some((s) => argsOf(s, 'RUN').some((r) => r.includes('npm run build')))).toBe(true);
    expect(argsOf(final, 'COPY')).toContain('--from=build /app/dist ./dist');
    expect(argsOf(final, 'ENTRYPOINT')).toEqual([
      '["node", "--enable-source-maps", "--import", "./dist/instrument.mjs", "dist/platform.mjs"]',
    ]);
    expect(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.build).toBe('tsx scripts/build.ts');
  });

  it('runs as an unprivileged user whose data folder is a volume it owns', () => {
    const user = argsOf(final, 'USER').at(-1);
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user);
    expect(env.DATA_DIR).toMatch(/^\//);
    expect(argsOf(final, 'VOLUME')).toContain(env.DATA_DIR);
    expect(argsOf(final, 'RUN').some((r) => r.includes(`chown ${user}:${user} ${env.DATA_DIR}`))).toBe(true);
  });
});

describe("the image's program with the image's environment, as a user who cannot write its folder", () => {
  it('starts on its embedded engines, keeps its data in DATA_DIR, and exits 0 on SIGTERM', async () => {
    const port = await freePort();
    const p = runBundle({ DATA_DIR: dataDir }, port);
    try {
      await Promise.race([
        waitFor(`http://127.0.0.1:${port}/ready`, 200, 120_000),
        p.exited.then((code) => {
          throw new Error(`exited with ${code} before it was ready`);
        }),
      ]).catch((e: Error) => {
        throw new Error(`${e.message}\n${p.output().slice(-3000)}`);
      });
    } finally {
      p.child.kill('SIGTERM');
    }
    expect(await p.exited, p.output().slice(-3000)).toBe(0);
  }, 180_000);

  it.runIf(asRoot)(
    'fails without DATA_DIR: the default folder lies in the tree it cannot write',
    async () => {
      const p = runBundle({ DATA_DIR: undefined }, await freePort());
      expect(await p.exited).not.toBe(0);
      expect(p.output()).toMatch(/EACCES/);
    },
    60_000,
  );
});
