import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Upstream } from '../../../gateway/upstream/client';

/**
 * An upload's answer comes after the upstream stored the rest of the body (an object's last part
 * and its completion), which on a busy store takes longer than a call's deadline: the gateway waits
 * for it instead of answering 504 for an upload that is being stored.
 */
let server: Server;
let url: string;
const STORE_MS = 600; // the upstream's work after the last byte arrived

beforeAll(async () => {
  server = createServer((req, res) => {
    let bytes = 0;
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => {
      void sleep(STORE_MS).then(() => {
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ bytes }));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const answerOf = async (upstream: Upstream, body: Buffer | Readable) => {
  const answer = await upstream.call({ method: 'POST', path: '/v1/files/upload', headers: {}, body, tenantId: 't1' });
  let text = '';
  for await (const chunk of answer.body) text += String(chunk);
  return { status: answer.status, body: JSON.parse(text) as { bytes: number } };
};

describe('an upstream answering an upload after storing it', () => {
  it('is waited for past the call deadline when the body was streamed', async () => {
    // given a call deadline shorter than the upstream's storing
    const upstream = new Upstream('write-api', url, { timeoutMs: 200 });
    try {
      // when a body is streamed to it
      const body = Readable.from([Buffer.alloc(64 * 1024, 1), Buffer.alloc(64 * 1024, 2)]);
      // then its answer arrives, with every byte counted
      expect(await answerOf(upstream, body)).toEqual({ status: 201, body: { bytes: 128 * 1024 } });
    } finally {
      upstream.close();
    }
  });

  it('keeps the call deadline for a body sent whole (a 504 at 200 ms)', async () => {
    const upstream = new Upstream('write-api', url, { timeoutMs: 200 });
    try {
      await expect(answerOf(upstream, Buffer.from('{}'))).rejects.toMatchObject({ status: 504 });
    } finally {
      upstream.close();
    }
  });
});
