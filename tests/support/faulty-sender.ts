import { connect } from 'node:net';

/**
 * How a body goes wrong:
 * - `cut`: the HTTP message is whole (Content-Length as sent) but the JSON or form in it stops
 *   half-way (the sender gives the cut body);
 * - `truncated`: Content-Length promises more than is sent, then the client ends its side (FIN);
 * - `aborted`: part of the declared body, then the connection is reset (RST) mid-body;
 * - `oversized`: a Content-Length beyond the limit, and all those bytes sent;
 * - `oversized-chunked`: no Content-Length (chunked), bytes beyond the limit, so only a limit
 *   measured while the body streams can refuse it.
 */
export type BodyFault = 'cut' | 'truncated' | 'aborted' | 'oversized' | 'oversized-chunked';

export interface FaultyRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** the body as it would be whole (truncated and aborted send half of it) */
  body: Buffer;
  fault: BodyFault;
}

export interface FaultOutcome {
  /** the status of the answer, when one arrived before the connection ended */
  status: number | null;
  /** the connection neither answered nor closed within the deadline */
  hung: boolean;
}

const CHUNK = 16 * 1024;

/**
 * Sends one request whose body goes wrong (BodyFault) over a raw socket, as no HTTP client would,
 * and resolves once the server has answered or closed the connection (never rejects: whatever the
 * server does with the connection is an outcome). See tests/support/slow-sender.ts for a client
 * that keeps sending after the answer.
 */
export const sendFaulty = (baseUrl: string, request: FaultyRequest, deadlineMs = 20_000): Promise<FaultOutcome> =>
  new Promise((resolve) => {
    const url = new URL(baseUrl);
    const socket = connect({ host: url.hostname, port: Number(url.port) });
    const chunked = request.fault === 'oversized-chunked';
    const head = [
      `${request.method} ${request.path} HTTP/1.1`,
      `host: ${url.host}`,
      chunked ? 'transfer-encoding: chunked' : `content-length: ${request.body.length}`,
      ...Object.entries(request.headers).map(([name, value]) => `${name}: ${value}`),
      '',
      '',
    ].join('\r\n');
    let received = '';
    let done = false;
    const finish = (hung = false) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const status = /^HTTP\/1\.1 (\d{3})/.exec(received)?.[1];
      resolve({ status: status ? Number(status) : null, hung });
    };
    const timer = setTimeout(() => finish(true), deadlineMs);
    socket.on('error', () => finish());
    socket.on('close', () => finish());
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      // the status line is all the test reads (of an answer to a body still being sent, or of a whole one)
      if (/^HTTP\/1\.1 \d{3}/.test(received)) finish();
    });
    socket.on('connect', () => {
      const half = request.body.subarray(0, Math.floor(request.body.length / 2));
      switch (request.fault) {
        case 'truncated':
          socket.end(Buffer.concat([Buffer.from(head), half]));
          return;
        case 'aborted':
          socket.write(Buffer.concat([Buffer.from(head), half]), () =>
            // the server has the head and half the body (or is reading it): the connection goes mid-body
            setTimeout(() => {
              if (!done) socket.resetAndDestroy();
            }, 20),
          );
          return;
        case 'cut':
        case 'oversized':
        case 'oversized-chunked':
          void sendAll(socket, head, request.body, chunked);
          return;
      }
    });
  });

/** the head and the body at the pace the socket takes it, until it is sent or the socket is gone */
const sendAll = async (
  socket: ReturnType<typeof connect>,
  head: string,
  body: Buffer,
  chunked: boolean,
): Promise<void> => {
  const write = (data: Buffer | string) =>
    new Promise<boolean>((resolve) => {
      if (socket.destroyed || !socket.writable) return resolve(false);
      if (socket.write(data)) return resolve(true);
      const onDrain = () => {
        socket.off('close', onClose);
        resolve(true);
      };
      const onClose = () => {
        socket.off('drain', onDrain);
        resolve(false);
      };
      socket.once('drain', onDrain);
      socket.once('close', onClose);
    });
  if (!(await write(head))) return;
  for (let at = 0; at < body.length; at += CHUNK) {
    const part = body.subarray(at, at + CHUNK);
    const framed = chunked
      ? Buffer.concat([Buffer.from(`${part.length.toString(16)}\r\n`), part, Buffer.from('\r\n')])
      : part;
    if (!(await write(framed))) return;
  }
  if (chunked) await write('0\r\n\r\n');
};
