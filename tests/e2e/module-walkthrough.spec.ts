import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../support/poll';
import type { PlatformProcess } from '../support/process';
import { embeddedEnv, freePort, runCli, runPlatform, waitFor } from '../support/process';

/**
 * The README's module walkthrough as an operator runs it: `npm start` on embedded engines (no
 * Redis, the PostgreSQL log), then `platform modules register` and `install` from a second process
 * on the same DATA_DIR, then the tenant Owner's request to the module's routes — with the token it
 * held before, and no restart. An operator command changes what the running process caches
 * (permission catalog, access); the change must reach it through PostgreSQL, not a shared cache it
 * does not have.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'platform-walkthrough-'));
const embedded = embeddedEnv(dataDir);
const cli = { DATA_DIR: dataDir };
const password = 'vX9#qL2!mR7p-walkthrough';
/** "at once": the time a change takes to reach the running process, with room for a loaded machine */
const AT_ONCE_MS = 10_000;
let server: PlatformProcess;

interface Answer {
  status: number;
  body: Record<string, unknown> | null;
}

const call = async (path: string, init: { method?: string; token?: string; body?: unknown } = {}): Promise<Answer> => {
  const res = await fetch(`${server.url}/v1${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: {
      ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : null };
};

const cliOk = async (args: string[]) => {
  const run = await runCli(args, cli);
  expect(run.code, `${args.join(' ')}\n${run.stdout}\n${run.stderr}`).toBe(0);
  return run;
};

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

describe('the README module walkthrough beside a running `npm start` (no Redis)', () => {
  let owner: string;
  let tenantId: string;

  beforeAll(async () => {
    const registered = await call('/auth/register', {
      body: { email: 'walkthrough@example.com', password },
    });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    owner = registered.body!.accessToken as string;
    tenantId = (registered.body!.tenant as { id: string }).id;
    // the Owner's access is cached by the running process before the operator acts
    expect((await call('/auth/me', { token: owner })).status).toBe(200);
  }, 60_000);

  it("lets the tenant Owner use the module's routes at once after `modules register` and `install`", async () => {
    const registered = await cliOk(['modules', 'register', 'modules/crm']);
    expect(registered.stdout).toMatch(/pmk_/);
    await cliOk(['modules', 'install', 'crm', '--tenant', tenantId]);

    const created = await pollUntil(
      () =>
        call('/data/crm/contacts', {
          token: owner,
          body: { name: 'Ada', email: 'ada@example.com' },
        }),
      (a) => a.status !== 403,
      { timeoutMs: AT_ONCE_MS, everyMs: 200, what: 'the Owner allowed on crm' },
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const listed = await call('/data/crm/contacts', { token: owner });
    expect(listed.status).toBe(200);
    expect((listed.body!.data as { name: string }[]).map((c) => c.name)).toEqual(['Ada']);
  }, 240_000);

  it("grants the Owner a new version's model at once after `modules update`", async () => {
    // crm 1.1.0: the sample's folder with a third migration and model
    const folder = join(dataDir, 'crm-1.1.0');
    cpSync(fileURLToPath(new URL('../../modules/crm', import.meta.url)), folder, { recursive: true });
    const manifest = JSON.parse(readFileSync(join(folder, 'manifest.json'), 'utf8')) as {
      version: string;
      models: { name: string; autoApi: boolean }[];
    };
    manifest.version = '1.1.0';
    manifest.models.push({ name: 'tags', autoApi: true });
    writeFileSync(join(folder, 'manifest.json'), JSON.stringify(manifest, null, 2));
    writeFileSync(
      join(folder, 'migrations', '0003_tags.sql'),
      'CREATE TABLE tags (tenant_id text NOT NULL, id uuid PRIMARY KEY, label text);\n',
    );
    await cliOk(['modules', 'update', folder]);

    const created = await pollUntil(
      () => call('/data/crm/tags', { token: owner, body: { label: 'vip' } }),
      (a) => a.status !== 403,
      { timeoutMs: AT_ONCE_MS, everyMs: 200, what: 'the Owner allowed on crm tags' },
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
  }, 240_000);

  it('takes a deactivation and an activation run beside it into account at once', async () => {
    await cliOk(['modules', 'deactivate', 'crm', '--tenant', tenantId]);
    await pollUntil(
      () => call('/data/crm/contacts', { token: owner }),
      (a) => a.status === 404,
      { timeoutMs: AT_ONCE_MS, everyMs: 200, what: 'crm gone for the tenant' },
    );
    await cliOk(['modules', 'activate', 'crm', '--tenant', tenantId]);
    await pollUntil(
      () => call('/data/crm/contacts', { token: owner }),
      (a) => a.status === 200,
      { timeoutMs: AT_ONCE_MS, everyMs: 200, what: 'crm back for the tenant' },
    );
  }, 240_000);
});
