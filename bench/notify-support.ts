import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { testToken } from '../tests/support/auth';
import { NOTIFY_PERMISSIONS } from '../tests/support/notify';
import type { ServerProcess } from './support';
import { percentile, startServerProcess } from './support';

/**
 * Shared pieces of the notification benchmarks: the notify server as a child process
 * (tests/support/service-server.ts) on a fresh database, and an SMTP sink that only counts (no MIME
 * parse, so the bench process takes little of the two cores).
 */
export type NotifyServer = ServerProcess;

/** the notify server; NOTIFY_SERVER_DELIVERY=off in env leaves the delivery workers out (acceptance alone) */
export const startNotifyServer = (env: Record<string, string>, nodeArgs: string[] = []): Promise<NotifyServer> =>
  startServerProcess(
    'notify',
    { ...env, SERVICE_WORKERS: env.NOTIFY_SERVER_DELIVERY === 'off' ? 'off' : 'on' },
    nodeArgs,
  );

export const authorization = (tenantId: string) => `Bearer ${testToken(tenantId, 'bench-sender', NOTIFY_PERMISSIONS)}`;

export const post = async (
  url: string,
  tenantId: string,
  path: string,
  body: unknown,
): Promise<{ status: number; body: { ids?: string[]; notificationId?: string } }> => {
  const res = await fetch(`${url}/v1${path}`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { authorization: authorization(tenantId), 'content-type': 'application/json' },
  });
  return { status: res.status, body: (await res.json()) as { ids?: string[] } };
};

/** an SMTP server that accepts everything and counts messages by X-Notification-Id */
export const startSmtpSink = async (): Promise<{
  url: string;
  received: Map<string, number>;
  arrivals: number[];
  close(): Promise<void>;
}> => {
  const received = new Map<string, number>();
  const arrivals: number[] = [];
  const server = new SMTPServer({
    authOptional: true,
    allowInsecureAuth: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onAuth: (_auth, _session, cb) => cb(null, { user: 'bench' }),
    onData(stream, _session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const id =
          /X-Notification-Id: ([0-9a-f-]{36})/i.exec(Buffer.concat(chunks).toString('latin1'))?.[1] ?? 'unknown';
        received.set(id, (received.get(id) ?? 0) + 1);
        arrivals.push(performance.now());
        cb();
      });
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://bench:bench@127.0.0.1:${port}`,
    received,
    arrivals,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
};

export const latencySummary = (ms: number[]) => {
  const s = [...ms].sort((a, b) => a - b);
  return {
    n: s.length,
    p50: Math.round(percentile(s, 50) * 10) / 10,
    p99: Math.round(percentile(s, 99) * 10) / 10,
    max: Math.round((s.at(-1) ?? NaN) * 10) / 10,
  };
};
