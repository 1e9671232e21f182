import { connect, createServer, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** drops every connection and stops listening: the server behind looks gone */
  cut(): Promise<void>;
  /** listens again on the same port (nothing to do while it listens) */
  restore(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A loopback TCP relay in front of a real server, to test how a client behaves when the network
 * to it fails, without stopping a server other tests share.
 */
export const startTcpProxy = async (target: { host: string; port: number }): Promise<TcpProxy> => {
  const sockets = new Set<Socket>();
  let server: Server | null = null;
  let port = 0;

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server = createServer((client) => {
        const upstream = connect(target);
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on('close', () => sockets.delete(s));
          s.on('error', () => {
            client.destroy();
            upstream.destroy();
          });
        }
        client.pipe(upstream).pipe(client);
      });
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        port = (server!.address() as { port: number }).port;
        resolve();
      });
    });

  const cut = async () => {
    for (const s of sockets) s.destroy();
    const closing = server;
    server = null;
    if (closing) await new Promise((resolve) => closing.close(resolve));
  };

  await listen();
  return {
    get port() {
      return port;
    },
    cut,
    // a second listen on the port would fail and leave `server` naming the failed one
    restore: () => (server ? Promise.resolve() : listen()),
    close: cut,
  };
};
