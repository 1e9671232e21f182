import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testToken } from '../../support/auth';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import type { FilesClient } from '../../support/files';
import { filesClient, uniqueTenant, waitForStatus } from '../../support/files';

/**
 * `npm start` without CLAMD_HOST (the local object store, no scanner): uploads stay pending_scan
 * and /health names the missing scanner; with FILES_SCAN=skip, accepted in development only (the
 * configuration refuses it elsewhere: tests/unit/files/settings.spec.ts), files are released
 * unscanned with scan status skipped, and the start logs a warning. One process: the variables
 * are the process's, and both platforms run side by side.
 */
const health = async (p: TestPlatform) =>
  (await (
    await fetch(`${p.url}/health`, {
      headers: { authorization: `Bearer ${testToken('ops', 'admin', ['platform.*'])}` },
    })
  ).json()) as {
    components: Record<string, { status: string; error?: string; detail?: string }>;
  };

describe('without CLAMD_HOST', () => {
  let p: TestPlatform;
  let c: FilesClient;
  beforeAll(async () => {
    p = await startTestPlatform({ services: ['files'], env: { FILES_WORKER_POLL_MS: '50' }, captureLogs: true });
    c = filesClient(p.url, uniqueTenant('unscanned'));
  });
  afterAll(async () => {
    await p?.close();
  });

  it('keeps uploads pending_scan: never released unscanned, 404 for clients', async () => {
    const upload = await c.upload(randomBytes(2048), { originalName: 'waits.bin' });
    expect(upload.body).toMatchObject({ status: 'pending_scan', url: null });
    await new Promise((resolve) => setTimeout(resolve, 1000)); // twenty worker polls
    expect((await c.get(`/files/${upload.body.id}`)).body).toMatchObject({
      status: 404,
      type: expect.stringMatching(/\/file-not-found$/),
    });
    expect((await c.get('/files?status=pending_scan')).body.data.map((f: { id: string }) => f.id)).toEqual([
      upload.body.id,
    ]);
  });

  it('says in /health that the scanner is missing, and warned at start', async () => {
    expect(JSON.stringify((await health(p)).components.clamav)).toMatch(/unhealthy.*no virus scanner configured/);
    expect(p.logLines().some((l) => /CLAMD_HOST is not set/.test(l.msg))).toBe(true);
  });
});

describe('with FILES_SCAN=skip in development', () => {
  let p: TestPlatform;
  let c: FilesClient;
  beforeAll(async () => {
    p = await startTestPlatform({
      services: ['files'],
      env: { FILES_WORKER_POLL_MS: '50', FILES_SCAN: 'skip', PLATFORM_ENV: 'development' },
      captureLogs: true,
    });
    c = filesClient(p.url, uniqueTenant('skipped'));
  });
  afterAll(async () => {
    await p?.close();
  });

  it('releases uploads unscanned, with scan status skipped, and warns at start', async () => {
    const bytes = randomBytes(4096);
    const upload = await c.upload(bytes, { originalName: 'unscanned.bin' });
    await waitForStatus(c, upload.body.id, 'available');
    expect((await c.get(`/files/${upload.body.id}?meta=1`)).body).toMatchObject({
      status: 'available',
      scanStatus: 'skipped',
    });
    const content = await fetch(`${p.url}/v1/files/${upload.body.id}?download=1`, { headers: c.auth });
    expect(Buffer.from(await content.arrayBuffer()).equals(bytes)).toBe(true);
    expect(
      p.logLines().some((l) => /FILES_SCAN=skip: uploaded files are released WITHOUT a virus scan/.test(l.msg)),
    ).toBe(true);
  });
});
