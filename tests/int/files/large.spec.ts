import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import { SPLIT } from '../../support/topology';
import type { FilesClient } from '../../support/files';
import {
  clamdEnv,
  digestOf,
  filesClient,
  peakGrowth,
  streamUpload,
  testBucket,
  uniqueTenant,
  waitForStatus,
} from '../../support/files';

/**
 * A 40 MB document end to end with the default limits: streamed in (chunked, through the gateway
 * in the split run), scanned by clamd, released and downloaded byte-identical — the content is
 * generated and hashed as it flows on the client side too, so what the server processes hold is
 * all the memory growth measured (their resident memory, sampled every 20 ms). In the split run each
 * role collects its garbage every 100 ms (tests/support/collect-garbage.mjs): without it a role that
 * streams grows, until V8's external-memory trigger (about 64 MB), by as much as one that buffers.
 */
const COLLECT_GARBAGE = `--import=${new URL('../../support/collect-garbage.mjs', import.meta.url).pathname}`;
const MB = 1_048_576;
let p: TestPlatform;
const bucket = testBucket();
let c: FilesClient;

beforeAll(async () => {
  p = await startTestPlatform({
    services: ['files'],
    env: {
      ...bucket.env,
      ...clamdEnv(),
      FILES_WORKER_POLL_MS: '50',
      ...(SPLIT ? { NODE_OPTIONS: COLLECT_GARBAGE } : {}),
    },
  });
  c = filesClient(p.url, uniqueTenant('large'));
  // The same path walked first with 8 MB: modules, pools and the heap's working size are in place,
  // so what the 40 MB file adds on top is what a process holds because of the file's size.
  await roundTrip(8 * MB);
});
afterAll(async () => {
  await p?.close();
  await bucket.drop();
});

/** upload, scan, release and download of generated content; the digests sent and received */
const roundTrip = async (size: number) => {
  const { answer, sha256 } = await streamUpload(p.url, c.auth, size);
  expect(answer.status).toBe(201);
  expect(answer.body).toMatchObject({ status: 'pending_scan', size, mimeType: 'application/octet-stream' });
  await waitForStatus(c, answer.body.id, 'available', 90_000);
  const res = await fetch(`${p.url}/v1/files/${answer.body.id}?download=1`, { headers: c.auth });
  expect(res.status).toBe(200);
  return { sent: sha256, received: await digestOf(res), meta: (await c.get(`/files/${answer.body.id}?meta=1`)).body };
};

describe('a 40 MB file', () => {
  it('streams in, is scanned and released, and downloads byte-identical, with memory bounded (each split role under 32 MB of growth)', async () => {
    const { result, growth } = await peakGrowth(p.pids, () => roundTrip(40 * MB));
    expect(result.received).toEqual({ sha256: result.sent, size: 40 * MB });
    expect(result.meta).toMatchObject({ scanStatus: 'clean', size: 40 * MB });
    const grown = Object.entries(growth)
      .map(([role, bytes]) => `${role} ${(bytes / MB).toFixed(1)} MB`)
      .join(', ');
    // Split: each server role is a process of its own, measured alone. All-in-one: the one process is
    // also the client that generates, sends, receives and hashes the 40 MB, so twice the streams run in it.
    const bound = p.topology === 'split' ? 32 * MB : 80 * MB;
    for (const bytes of Object.values(growth)) expect(bytes, `grown: ${grown}`).toBeLessThan(bound);
  });
});
