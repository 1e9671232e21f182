import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestClock } from '../../support/clock';
import { offsetClock } from '../../support/clock';
import { testToken } from '../../support/auth';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import type { TcpProxy } from '../../support/tcp-proxy';
import { startTcpProxy } from '../../support/tcp-proxy';
import { requireEnv } from '../../support/env';
import { sendSlowly } from '../../support/slow-sender';
import type { FilesClient } from '../../support/files';
import { clamdEnv, eventually, filesClient, testBucket, uniqueTenant, waitForStatus } from '../../support/files';
import { pollUntil } from '../../support/poll';

/**
 * clamd unreachable: files stay pending_scan and are never released unscanned; they are released
 * once it is back. The shared clamd is never stopped: the platform reaches it through a TCP proxy
 * this test cuts (in the split run the workers role connects through the same proxy).
 */
let p: TestPlatform;
let proxy: TcpProxy;
let clock: TestClock;
const bucket = testBucket();
let c: FilesClient;

beforeAll(async () => {
  proxy = await startTcpProxy({ host: requireEnv('TEST_CLAMD_HOST'), port: Number(requireEnv('TEST_CLAMD_PORT')) });
  clock = offsetClock();
  p = await startTestPlatform({
    services: ['files'],
    clock,
    env: { ...bucket.env, ...clamdEnv(proxy.port), FILES_WORKER_POLL_MS: '50', FILES_STAGING_MAX_PER_TENANT: '3' },
  });
});
afterAll(async () => {
  await p?.close();
  await proxy?.close();
  await bucket.drop();
});

/** the scan task of a file has been tried and failed at least once */
const scanFailed = (fileId: string) =>
  eventually(
    async () => {
      const { rows } = await p.kernel.db.query<{ attempts: number; last_error: string | null }>(
        `SELECT attempts, last_error FROM files.tasks WHERE kind = 'scan' AND file_id = $1`,
        [fileId],
      );
      return rows[0] && rows[0].attempts >= 1 && rows[0].last_error ? rows[0] : undefined;
    },
    20_000,
    'a failed scan attempt',
  );

/**
 * clamd is back: each waiting scan is retried once its wait (moved past by the clock, a minute at a
 * time) is over; a circuit breaker opened by the failed attempts lets calls through again after 30 s
 */
const releasedAfterRestore = async (ids: string[]) => {
  await proxy.restore();
  await pollUntil(
    async () => {
      clock.advance(60_000);
      return Promise.all(ids.map(async (id) => (await c.get(`/files/${id}?meta=1`)).body.status as string | undefined));
    },
    (statuses) => statuses.every((s) => s === 'available'),
    { timeoutMs: 60_000, everyMs: 250, what: 'every file released' },
  );
};

describe('clamd unreachable', () => {
  beforeAll(async () => {
    c = filesClient(p.url, uniqueTenant('outage'));
  });

  it('leaves an upload pending_scan (404 for clients), and /health says clamav is down', async () => {
    await proxy.cut();
    const upload = await c.upload(randomBytes(10_000), { originalName: 'waits.bin' });
    expect(upload.status).toBe(201);
    await scanFailed(upload.body.id);
    expect((await c.get(`/files/${upload.body.id}`)).status).toBe(404);
    expect((await c.get(`/files/${upload.body.id}`)).body.type).toMatch(/\/file-not-found$/);
    expect((await c.get('/files?status=pending_scan')).body.data.map((f: { id: string }) => f.id)).toContain(
      upload.body.id,
    );
    const health = await fetch(`${p.url}/health`, {
      headers: { authorization: `Bearer ${testToken('ops', 'admin', ['platform.*'])}` },
    });
    expect(
      ((await health.json()) as { components: Record<string, { status: string }> }).components.clamav?.status,
    ).toBe('unhealthy');

    // clamd back: the retry scans and releases it
    await releasedAfterRestore([upload.body.id]);
    const meta = await c.get(`/files/${upload.body.id}?meta=1`);
    expect(meta.body.scanStatus).toBe('clean');
  });

  it('refuses a 4th staged file with 503 staging-limit-exceeded (limit 3 here), and takes uploads again once they are released', async () => {
    await proxy.cut();
    const staged = [];
    for (let i = 0; i < 3; i += 1)
      staged.push((await c.upload(randomBytes(1000), { originalName: `s${i}.bin` })).body.id as string);
    const refused = await c.upload(randomBytes(1000), { originalName: 'one-too-many.bin' });
    expect(refused.status).toBe(503);
    expect(refused.body.type).toMatch(/\/staging-limit-exceeded$/);
    expect(refused.headers.get('retry-after')).toBe('30');
    // a client still sending its body when the refusal comes reads it, and keeps its connection
    const slow = await sendSlowly(p.url, {
      method: 'POST',
      path: '/v1/files/upload',
      headers: { ...c.auth, 'content-type': 'multipart/form-data; boundary=x' },
      body: Buffer.alloc(256 * 1024, 0x61),
      sendBeforeAnswer: 1024,
    });
    expect(slow).toEqual({
      first: expect.stringMatching(/^HTTP\/1\.1 503/),
      second: expect.stringMatching(/^HTTP\/1\.1 200/),
    });
    // another tenant has its own staging area
    expect((await filesClient(p.url, uniqueTenant('other')).upload(randomBytes(1000))).status).toBe(201);

    await releasedAfterRestore(staged);
    expect((await c.upload(randomBytes(1000), { originalName: 'after.bin' })).status).toBe(201);
  });

  it('rejects a file still staged after 24 hours (staging-expired) and removes its bytes', async () => {
    await proxy.cut();
    const forgetful = filesClient(p.url, uniqueTenant('forgetful')); // a staging area of its own
    const upload = await forgetful.upload(randomBytes(1000), { originalName: 'forgotten.bin' });
    await scanFailed(upload.body.id);
    clock.advance(25 * 3600_000);
    await waitForStatus(forgetful, upload.body.id, 'rejected');
    expect((await forgetful.get(`/files/${upload.body.id}`)).body).toMatchObject({
      status: 422,
      reason: 'staging-expired',
    });
    expect((await bucket.keys()).filter((k) => k.includes(upload.body.id))).toEqual([]);
    await proxy.restore();
  });
});
