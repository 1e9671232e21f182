import { connect } from 'node:net';

export interface SlowSendOutcome {
  /** the status line of the answer that came while the body was still being sent */
  first: string;
  /** the status line of a second request sent on the same connection afterwards, or null if it was gone */
  second: string | null;
}

/**
 * A client that is still sending when the server answers: it sends the head and the first
 * `sendBeforeAnswer` bytes of the body, waits for the answer, then sends the rest of the body
 * and, on the same connection, GET /live. What fetch does by chance under load (the answer
 * overtaking the body), done on purpose, so that a server closing under the sender is seen every
 * time (fetch then fails with EPIPE instead of giving the answer).
 */
export const sendSlowly = (
  baseUrl: string,
  request: { method: string; path: string; headers: Record<string, string>; body: Buffer; sendBeforeAnswer: number },
): Promise<SlowSendOutcome> =>
  new Promise((resolve) => {
    const url = new URL(baseUrl);
    const socket = connect({ host: url.hostname, port: Number(url.port) });
    const head = [
      `${request.method} ${request.path} HTTP/1.1`,
      `host: ${url.host}`,
      `content-length: ${request.body.length}`,
      ...Object.entries(request.headers).map(([name, value]) => `${name}: ${value}`),
      '',
      '',
    ].join('\r\n');
    let received = '';
    let first: string | null = null;
    const statusLines = () => received.match(/HTTP\/1\.1 \d{3}[^\r]*/g) ?? [];
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ first: first ?? '', second: statusLines()[1] ?? null });
    };
    const timer = setTimeout(finish, 10_000);
    socket.on('error', finish);
    socket.on('close', finish);
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      const lines = statusLines();
      if (first === null && lines.length >= 1) {
        first = lines[0] ?? '';
        // the answer overtook the body: send the rest of it, then a second request on the same connection
        socket.write(request.body.subarray(request.sendBeforeAnswer));
        socket.write(`GET /live HTTP/1.1\r\nhost: ${url.host}\r\n\r\n`);
      }
      if (lines.length >= 2) finish();
    });
    socket.on('connect', () =>
      socket.write(Buffer.concat([Buffer.from(head), request.body.subarray(0, request.sendBeforeAnswer)])),
    );
  });
