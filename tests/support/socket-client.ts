import { WebSocket } from 'ws';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- messages are checked field by field
export type SocketMessage = any;

export interface SocketClient {
  /** every message received, in order */
  messages: SocketMessage[];
  /** the notifications received (type notification) */
  notifications(): SocketMessage[];
  /** resolves with the close code */
  closed: Promise<{ code: number; reason: string }>;
  waitFor(predicate: (messages: SocketMessage[]) => boolean, what: string, timeoutMs?: number): Promise<void>;
  send(message: unknown): void;
  close(): Promise<void>;
}

/** a WebSocket client of GET /v1/notify/ws (ws, as Node 20 has no WebSocket client of its own) */
export const connectSocket = async (baseUrl: string): Promise<SocketClient> => {
  const socket = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/v1/notify/ws`);
  const messages: SocketMessage[] = [];
  const listeners = new Set<() => void>();
  socket.on('message', (raw) => {
    messages.push(JSON.parse((raw as Buffer).toString('utf8')));
    for (const l of listeners) l();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.on('close', (code, reason) => {
      resolve({ code, reason: String(reason) });
      for (const l of listeners) l();
    }),
  );
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  const waitFor: SocketClient['waitFor'] = (predicate, what, timeoutMs = 15_000) =>
    new Promise((resolve, reject) => {
      const check = () => {
        if (!predicate(messages)) return;
        finish();
        resolve();
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`socket: no ${what} within ${timeoutMs} ms; got ${JSON.stringify(messages).slice(0, 2000)}`));
      }, timeoutMs);
      const finish = () => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      listeners.add(check);
      check();
    });
  return {
    messages,
    notifications: () => messages.filter((m) => m.type === 'notification'),
    closed,
    waitFor,
    send: (message) => socket.send(JSON.stringify(message)),
    close: async () => {
      if (socket.readyState === socket.CLOSED) return;
      socket.close();
      await closed;
    },
  };
};

/** connects and authenticates; resolves once the server said ready (after any replay) */
export const openSession = async (
  baseUrl: string,
  token: string,
  lastNotificationId?: string,
): Promise<SocketClient> => {
  const client = await connectSocket(baseUrl);
  client.send({ type: 'auth', token, ...(lastNotificationId ? { last_notification_id: lastNotificationId } : {}) });
  await client.waitFor((m) => m.some((x) => x.type === 'ready'), 'ready');
  return client;
};
