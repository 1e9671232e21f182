import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlatformProcess } from '../support/process';
import { embeddedEnv, freePort, runCli, runPlatform, waitFor } from '../support/process';

/**
 * `platform start` owns the embedded PostgreSQL of its DATA_DIR; a CLI command run beside it on
 * the same folder uses that server instead of trying to start a second one on the locked folder.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'platform-beside-'));
const embedded = embeddedEnv(dataDir);
const cli = { DATA_DIR: dataDir };
const password = 'vX9#qL2!mR7p-owner';
let server: PlatformProcess;

beforeAll(async () => {
  server = runPlatform(['start'], embedded, await freePort());
  await waitFor(`${server.url}/ready`, 200, 150_000).catch((e: Error) => {
    throw new Error(`${e.message}\n${server.output().slice(-3000)}`);
  });
}, 180_000);

afterAll(async () => {
  server?.child.kill('SIGTERM');
  await server?.exited;
  rmSync(dataDir, { recursive: true, force: true });
});

describe('platform owner create beside a running platform start on the same DATA_DIR', () => {
  it("creates the owner in the running platform's database and says so", async () => {
    const run = await runCli(['owner', 'create', '--email', 'Owner@Example.com', '--password', password], cli);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^created platform owner owner@example\.com \([0-9a-f-]{36}\)$/im);

    // the running server sees the owner at once: it can sign in through it
    const login = await fetch(`${server.url}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'owner@example.com', password }),
    });
    expect(login.status, await login.clone().text()).toBe(200);
  });

  it('refuses an address that is not an email with a sentence, before touching anything', async () => {
    const run = await runCli(['owner', 'create', '--email', 'not-an-email', '--password', password], cli);
    expect(run.code).not.toBe(0);
    expect(run.stderr.split('\n')[0]).toBe(
      'owner create: --email must be an email address such as owner@example.com (got "not-an-email")',
    );
    expect(run.stderr).not.toMatch(/undefined|^\s+at /m);
  });

  it('refuses a weak password with a sentence from the password policy, never "undefined"', async () => {
    const run = await runCli(['owner', 'create', '--email', 'second@example.com', '--password', 'short'], cli);
    expect(run.code).not.toBe(0);
    expect(run.stderr.trim()).toMatch(
      /^platform owner create: The password does not meet the policy\. \(password: .+\)$/,
    );
    expect(run.stderr).not.toMatch(/undefined|^\s+at /m);
  });

  it("leaves the running platform's database running when it is done", async () => {
    expect((await fetch(`${server.url}/ready`)).status).toBe(200);
    const again = runPlatform(['start'], embedded, await freePort());
    expect(await again.exited).not.toBe(0);
    expect(again.output()).toMatch(
      /the embedded PostgreSQL of .* is already running \(pid \d+, port \d+\): another `platform start` uses this DATA_DIR; stop it or choose another DATA_DIR/,
    );
  });
});
