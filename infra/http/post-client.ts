import http from 'node:http';
import https from 'node:https';
import type { OutboundGuard } from '../security/outbound';

export interface PostAnswer {
  status: number;
  /** the start of the answer's body (at most MAX_KEPT bytes), for error messages */
  text: string;
}

/** POSTs a body; rejects with an Error named TimeoutError when no whole answer came within timeoutMs */
export type HttpPost = (
  url: string,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
) => Promise<PostAnswer>;

const MAX_KEPT = 4096;

/**
 * The platform's outgoing POST (webhook deliveries): node:http over keep-alive connections, about
 * half the CPU of a fetch per call; redirects are answers, never followed; the deadline covers the
 * whole exchange, and the rest of a long answer is read and dropped so the connection is reused.
 * Every connection goes through the outbound guard (a module's endpoint is not the platform's own
 * destination): a refused address rejects with OutboundRefused before any packet.
 */
export const createHttpPost = (guard: OutboundGuard): HttpPost => {
  const agents = {
    'http:': guard.httpAgent({ keepAlive: true, maxSockets: 64 }),
    'https:': guard.httpsAgent({ keepAlive: true, maxSockets: 64 }),
  };
  return (url, body, headers, timeoutMs) => post(agents, url, body, headers, timeoutMs);
};

const post = (
  agents: { 'http:': http.Agent; 'https:': https.Agent },
  url: string,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<PostAnswer> =>
  new Promise((resolve, reject) => {
    const target = new URL(url);
    const protocol = target.protocol === 'https:' ? 'https:' : 'http:';
    const send = protocol === 'https:' ? https.request : http.request;
    let settled = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn();
    };
    const req = send(
      target,
      {
        method: 'POST',
        agent: agents[protocol],
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      },
      (res) => {
        const kept: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          if (size < MAX_KEPT) kept.push(chunk);
          size += chunk.length;
        });
        res.on('end', () =>
          settle(() =>
            resolve({ status: res.statusCode ?? 0, text: Buffer.concat(kept).toString('utf8').slice(0, MAX_KEPT) }),
          ),
        );
        res.on('error', (error) => settle(() => reject(error)));
      },
    );
    const timer = setTimeout(() => {
      const error = Object.assign(new Error(`no answer within ${timeoutMs} ms`), { name: 'TimeoutError' });
      settle(() => reject(error));
      req.destroy(error);
    }, timeoutMs);
    req.on('error', (error) => settle(() => reject(error)));
    req.end(body);
  });
