import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Loads .test-infra/env (written by scripts/test-infra.sh) into process.env when the runner did not source it. */
const envFile = fileURLToPath(new URL('../../.test-infra/env', import.meta.url));
if (existsSync(envFile)) {
  for (const line of readFileSync(envFile, 'utf8').split('\n')) {
    const m = /^(?:export\s+)?([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (m && process.env[m[1]!] === undefined) process.env[m[1]!] = m[2]!.replace(/^["']|["']$/g, '');
  }
}

export const requireEnv = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run scripts/test-infra.sh (npm test does) first`);
  return value;
};

/**
 * A program scripts/test-infra.sh provides for the tests (tools/go/*, helm) in TEST_TOOLS_BIN:
 * its path, or an error saying how to get it — a missing program fails a suite, never skips it.
 */
export const testTool = (name: string): string => {
  const bin = `${requireEnv('TEST_TOOLS_BIN')}/${name}/${name}`;
  if (!existsSync(bin)) throw new Error(`${bin} is missing: scripts/test-infra.sh puts ${name} there; run it`);
  return bin;
};
