import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpPost } from '../../../infra/http/post-client';
import { OutboundGuard } from '../../../infra/security/outbound';

/** the platform's outgoing POST (webhook deliveries) against a local server that answers as told by the path */
let server: Server;
// the guard as in development and test: loopback is reachable (tests/int/security/outbound-guard.spec.ts refuses it)
const httpPost = createHttpPost(new OutboundGuard({ allowPrivate: true }));
let base = '';
const connections = new Set<string>();
const received: { path: string; body: string; headers: IncomingMessage['headers'] }[] = [];

const answer = (req: IncomingMessage, res: ServerResponse, body: string) => {
  received.push({ path: req.url ?? '', body, headers: req.headers });
  if (req.url === '/ok') return res.writeHead(204).end();
  if (req.url === '/fail') return res.writeHead(500, { 'content-type': 'text/plain' }).end('x'.repeat(10_000));
  if (req.url === '/moved') return res.writeHead(302, { location: `${base}/ok` }).end();
  if (req.url === '/silent') return; // never answers (the connection is closed when the suite ends)
  res.writeHead(404).end();
};

beforeAll(async () => {
  server = createServer((req, res) => {
    connections.add(`${req.socket.remotePort}`);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => answer(req, res, Buffer.concat(chunks).toString()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('httpPost', () => {
  it('sends the body and headers with a Content-Length, and reuses one connection for calls one after another', async () => {
    connections.clear();
    for (let i = 0; i < 5; i += 1)
      expect(await httpPost(`${base}/ok`, `{"i":${i}}`, { 'x-test': 'yes' }, 2_000)).toEqual({ status: 204, text: '' });
    expect(received.at(-1)).toMatchObject({ body: '{"i":4}', headers: { 'x-test': 'yes', 'content-length': '7' } });
    expect(connections.size).toBe(1);
  });

  it('gives a failure its status and the start of its body, and never follows a redirect', async () => {
    const failed = await httpPost(`${base}/fail`, '{}', {}, 2_000);
    expect({ status: failed.status, length: failed.text.length }).toEqual({ status: 500, length: 4096 });
    const before = received.length;
    expect((await httpPost(`${base}/moved`, '{}', {}, 2_000)).status).toBe(302);
    expect(received.slice(before).map((r) => r.path)).toEqual(['/moved']);
  });

  it('rejects with a TimeoutError when no answer came within the deadline', async () => {
    const started = Date.now();
    await expect(httpPost(`${base}/silent`, '{}', {}, 200)).rejects.toMatchObject({
      name: 'TimeoutError',
      message: 'no answer within 200 ms',
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
  });

  it('rejects when nothing listens', async () => {
    await expect(httpPost('http://127.0.0.1:1/none', '{}', {}, 2_000)).rejects.toThrow(/ECONNREFUSED/);
  });
});
