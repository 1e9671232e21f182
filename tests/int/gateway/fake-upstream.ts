import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { commonErrors } from '../../../domain/shared/errors';
import { PRINCIPAL_HEADER } from '../../../gateway/internal-auth';

export type Behaviour = 'ok' | 'fail' | 'slow' | 'drop';

/**
 * A stand-in for write-api and read-api that fails on demand: it counts its hits, answers the
 * tally routes, and per tenant (from the gateway's principal header) or for everybody fails with
 * a plain 500, answers late, or drops the connection; or answers as a role still starting.
 */
export interface FakeUpstream {
  url: string;
  hits: number;
  /** behaviour for everybody */
  behaviour: Behaviour;
  /** behaviour of one tenant, over the general one */
  tenants: Map<string, Behaviour>;
  /** the next n calls fail, then the general behaviour again */
  failNext: number;
  /** the next n calls are answered as a role starting up answers (503, not judged), then the general behaviour */
  startingNext: number;
  slowMs: number;
  /** what the last call carried */
  last: { method: string; url: string; headers: IncomingMessage['headers']; body: string } | null;
  close(): Promise<void>;
}

const tenantOf = (req: IncomingMessage): string | null => {
  const header = req.headers[PRINCIPAL_HEADER];
  if (typeof header !== 'string') return null;
  return (JSON.parse(Buffer.from(header, 'base64url').toString()) as { t: string }).t;
};

export const startFakeUpstream = async (): Promise<FakeUpstream> => {
  const timers = new Set<NodeJS.Timeout>();
  const handle = (fake: FakeUpstream, req: IncomingMessage, res: ServerResponse, body: string) => {
    fake.hits += 1;
    fake.last = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
    const tenant = tenantOf(req);
    let behaviour = (tenant && fake.tenants.get(tenant)) || fake.behaviour;
    if (fake.startingNext > 0) {
      fake.startingNext -= 1;
      const problem = commonErrors.notReady('migrations have not run yet');
      res
        .writeHead(503, { 'content-type': 'application/problem+json', ...problem.headers })
        .end(JSON.stringify({ status: 503, title: problem.title, detail: problem.detail }));
      return;
    }
    if (fake.failNext > 0) {
      fake.failNext -= 1;
      behaviour = 'fail';
    }
    if (behaviour === 'drop') {
      req.socket.destroy();
      return;
    }
    if (behaviour === 'fail') {
      res.writeHead(500, { 'content-type': 'text/plain' }).end('boom');
      return;
    }
    const answer = () => {
      if (req.method === 'POST')
        res
          .writeHead(201, { 'content-type': 'application/json', 'x-upstream': 'fake' })
          .end(JSON.stringify({ id: 'c1', name: 'n', value: 0 }));
      else
        res
          .writeHead(200, { 'content-type': 'application/json', 'x-upstream': 'fake' })
          .end(JSON.stringify({ data: [] }));
    };
    if (behaviour === 'slow') {
      const t = setTimeout(() => {
        timers.delete(t);
        answer();
      }, fake.slowMs);
      timers.add(t);
    } else answer();
  };
  const ref: { fake?: FakeUpstream } = {};
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(ref.fake!, req, res, Buffer.concat(chunks).toString()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const fake: FakeUpstream = {
    url: `http://127.0.0.1:${port}`,
    hits: 0,
    behaviour: 'ok',
    tenants: new Map(),
    failNext: 0,
    startingNext: 0,
    slowMs: 7000,
    last: null,
    close: async () => {
      for (const t of timers) clearTimeout(t);
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  ref.fake = fake;
  return fake;
};
