import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Body } from '../../support/files';
import { filesClient, multipartBody, uniqueTenant } from '../../support/files';
import { sendFaulty } from '../../support/faulty-sender';
import type { TestPlatform } from '../../support/platform';
import { startTestPlatform } from '../../support/platform';
import { watchProcessErrors } from '../../support/process-errors';

/**
 * Presigned uploads to the local object store (`npm start` without S3: the platform is the form
 * target, POST /v1/objects/local). A form's refusal belongs to its request alone: the server goes
 * on serving every tenant (issue 22: a file one byte over its signed size ended the process).
 */
let p: TestPlatform;
const watched = watchProcessErrors();

beforeAll(async () => {
  p = await startTestPlatform({ services: ['files'] });
});
afterAll(async () => {
  await p?.close();
  watched.stop();
});

const presign = async (sizeBytes: number) => {
  const c = filesClient(p.url, uniqueTenant('local-upload'));
  const answer = await c.post('/files/presign', {
    bucket: 'documents',
    originalName: 'a.bin',
    mimeType: 'application/octet-stream',
    sizeBytes,
  });
  expect(answer.status).toBe(200);
  return answer.body;
};

/** the form as a browser sends it, to the platform's address (all-in-one tests have no public root URL) */
const send = async (presigned: Body, bytes: Buffer) => {
  const form = new FormData();
  for (const [name, value] of Object.entries(presigned.fields as Record<string, string>)) form.append(name, value);
  form.append('file', new Blob([bytes], { type: 'application/octet-stream' }), 'upload');
  return fetch(`${p.url}${new URL(presigned.uploadUrl as string).pathname}`, { method: 'POST', body: form });
};

/** the server processes answer and none of them went away or let an error reach its top */
const stillServing = async (pids: Record<string, number>) => {
  expect(p.pids).toEqual(pids);
  for (const pid of Object.values(p.pids)) {
    expect(() => process.kill(pid, 0)).not.toThrow();
    expect(readFileSync(`/proc/${pid}/status`, 'utf8')).not.toMatch(/^State:\s+Z/m);
  }
  expect((await p.http('/live')).status).toBe(200);
  expect(watched.errors()).toEqual([]);
};

describe('a presigned form for 10 bytes', () => {
  it('takes a file of 10 bytes (204)', async () => {
    const res = await send(await presign(10), Buffer.alloc(10, 1));
    expect(res.status).toBe(204);
  });

  it('refuses a file of 11 bytes with 413 payload-too-large, and the server keeps serving', async () => {
    const pids = { ...p.pids };
    const res = await send(await presign(10), Buffer.alloc(11, 1));
    expect(res.status).toBe(413);
    expect(((await res.json()) as Body).type).toMatch(/\/payload-too-large$/);
    await stillServing(pids);
    // and the next form is taken
    const next = await send(await presign(10), Buffer.alloc(10, 2));
    expect(next.status).toBe(204);
  });

  it('refuses a form that stops inside a part it does not read with 400, and the server keeps serving', async () => {
    const pids = { ...p.pids };
    const presigned = await presign(10);
    const { body, contentType } = multipartBody(presigned.fields as Record<string, string>, Buffer.alloc(4096, 3));
    // the part named file becomes a part the form target skips, and the form ends inside it
    const renamed = Buffer.from(body.toString('latin1').replace('name="file"', 'name="other"'), 'latin1');
    const outcome = await sendFaulty(p.url, {
      method: 'POST',
      path: new URL(presigned.uploadUrl as string).pathname,
      headers: { 'content-type': contentType },
      body: renamed.subarray(0, renamed.length - 2048),
      fault: 'cut',
    });
    expect(outcome.status).toBe(400);
    await stillServing(pids);
  });

  it('keeps serving when the client ends or resets the connection in the middle of the file', async () => {
    const pids = { ...p.pids };
    for (const fault of ['truncated', 'aborted'] as const) {
      const presigned = await presign(10);
      const { body, contentType } = multipartBody(presigned.fields as Record<string, string>, Buffer.alloc(64 * 1024));
      await sendFaulty(p.url, {
        method: 'POST',
        path: new URL(presigned.uploadUrl as string).pathname,
        headers: { 'content-type': contentType },
        body,
        fault,
      });
    }
    await stillServing(pids);
  });
});
