import type { WebSocket } from 'ws';
import type { Principal } from '../../infra/http/auth';
import type { Kernel } from '../../infra/kernel';
import type { SocketEnvelope, SocketPayload } from '../../projections/notify/shared/socket-bus';
import { socketBus } from '../../projections/notify/shared/socket-bus';
import { REPLAY_LIMIT, REPLAY_WINDOW_MS } from '../../domain/notify/socket';

/**
 * The real-time socket (GET /v1/notify/ws). Protocol (spec 002, the rest decided here):
 *   client → {type: "auth", token, last_notification_id?}   first, within 10 s
 *   server → {type: "notification", notification_id, …, replay: true}   up to 100 missed messages of the last hour, oldest first
 *            (without last_notification_id: the last 100 of the hour — the spec's replay; clients deduplicate by notification_id)
 *   server → {type: "ready", user_id, replayed}
 *   server → {type: "notification", notification_id, …}   live, as delivered
 *   client → {type: "ping"}  → server {type: "pong"}
 * Close codes: 4401 bad or missing auth, or the token expired (reconnect with a fresh one: the replay
 * covers the gap), 4408 no auth within 10 s, 1013 the client reads too slowly.
 */
const AUTH_TIMEOUT_MS = 10_000;
const HEARTBEAT_MS = 30_000;
/** a client this far behind is disconnected rather than buffered without bound (it replays on reconnect) */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface Connection {
  key: string;
  socket: WebSocket;
  /** notification ids sent on this connection (replay and live overlap while it starts) */
  sent: Set<string>;
  /** live messages that arrive while the replay is read: sent after it */
  pending: SocketPayload[] | null;
  /** when the token it authenticated with expires (epoch ms): the connection is closed then */
  expiresAt?: number;
}

/** setTimeout's longest delay (about 24.8 days) */
const MAX_TIMER_MS = 2_147_483_647;

const send = (c: Connection, message: object): void => {
  if (c.socket.readyState !== c.socket.OPEN) return;
  if (c.socket.bufferedAmount > MAX_BUFFERED_BYTES) {
    c.socket.close(1013, 'too far behind; reconnect to replay');
    return;
  }
  c.socket.send(JSON.stringify(message));
};

const sendNotification = (c: Connection, payload: SocketPayload, replay = false): void => {
  if (c.sent.has(payload.notification_id)) return;
  c.sent.add(payload.notification_id);
  if (c.sent.size > 2 * REPLAY_LIMIT) c.sent.delete(c.sent.values().next().value!);
  send(c, replay ? { ...payload, replay: true } : payload);
};

/** the sockets this process holds, by tenant and user, fed by the bus */
export class SocketHub {
  private readonly byUser = new Map<string, Set<Connection>>();
  private subscribed: Promise<void> | null = null;

  constructor(private readonly kernel: Kernel) {}

  /** resolves once this process receives every message published from now on */
  ready(): Promise<void> {
    this.subscribed ??= socketBus(this.kernel)
      .subscribe((e) => void this.deliver(e))
      .catch((error: unknown) => {
        this.subscribed = null;
        throw error;
      });
    return this.subscribed;
  }

  get connections(): number {
    let n = 0;
    for (const set of this.byUser.values()) n += set.size;
    return n;
  }

  attach(c: Connection): void {
    const set = this.byUser.get(c.key) ?? new Set();
    set.add(c);
    this.byUser.set(c.key, set);
  }

  detach(c: Connection): void {
    const set = this.byUser.get(c.key);
    set?.delete(c);
    if (set?.size === 0) this.byUser.delete(c.key);
  }

  private async deliver(e: SocketEnvelope): Promise<void> {
    const set = this.byUser.get(`${e.tenantId}:${e.userId}`);
    if (!set?.size) return;
    const payload =
      e.payload ??
      (
        await this.kernel.db
          .query<{ payload: SocketPayload }>(
            'SELECT payload FROM notify.socket_buffer WHERE seq = $1 AND tenant_id = $2',
            [e.seq, e.tenantId],
          )
          .catch(() => ({ rows: [] }))
      ).rows[0]?.payload;
    if (!payload) return;
    for (const c of set) {
      if (c.pending) c.pending.push(payload);
      else sendNotification(c, payload);
    }
  }

  /**
   * What the client missed: the messages delivered after the last one it saw, within the hour (the
   * 100 sent last of them), in the order they were sent; the last 100 of the hour when the client
   * names no last message, or one that is unknown (expired from the buffer).
   */
  async replay(tenantId: string, userId: string, lastId: string | null): Promise<SocketPayload[]> {
    const since = new Date(this.kernel.clock.now().getTime() - REPLAY_WINDOW_MS);
    const { rows } = await this.kernel.db.query<{ payload: SocketPayload }>(
      `SELECT payload FROM (
         SELECT payload, queued_seq FROM notify.socket_buffer
          WHERE tenant_id = $1 AND user_id = $2 AND created_at > $3
            AND seq > coalesce((SELECT seq FROM notify.socket_buffer WHERE tenant_id = $1 AND user_id = $2 AND notification_id = $4::uuid), 0)
          ORDER BY queued_seq DESC LIMIT $5) missed
        ORDER BY queued_seq`,
      [tenantId, userId, since, lastId, REPLAY_LIMIT],
    );
    return rows.map((r) => r.payload);
  }

  /** one client: authentication, replay, then live messages */
  accept(socket: WebSocket): void {
    let connection: Connection | null = null;
    let authenticating = false;
    let alive = true;
    const authTimer = setTimeout(() => socket.close(4408, 'send {"type":"auth","token":…} first'), AUTH_TIMEOUT_MS);
    const heartbeat = setInterval(() => {
      if (socket.readyState !== socket.OPEN) return;
      if (!alive) {
        socket.terminate();
        return;
      }
      alive = false;
      socket.ping();
    }, HEARTBEAT_MS);
    socket.on('pong', () => {
      alive = true;
    });
    let expiry: NodeJS.Timeout | undefined;
    socket.on('close', () => {
      clearTimeout(authTimer);
      clearTimeout(expiry);
      clearInterval(heartbeat);
      if (connection) this.detach(connection);
    });
    socket.on('message', (raw) => {
      const message = parseMessage(raw);
      if (connection) {
        if (message?.type === 'ping') send(connection, { type: 'pong' });
        return;
      }
      if (authenticating) return;
      authenticating = true;
      void this.authenticate(socket, message).then(
        (c) => {
          clearTimeout(authTimer);
          connection = c;
          // a connection lives no longer than its token: the client reconnects with a fresh one and replays
          if (c.expiresAt !== undefined) {
            const left = Math.max(0, c.expiresAt - this.kernel.clock.now().getTime());
            expiry = setTimeout(
              () => socket.close(4401, 'token expired; reconnect with a fresh token'),
              Math.min(left, MAX_TIMER_MS),
            );
          }
          // closed while it was being authenticated: the close handler saw no connection yet
          if (socket.readyState === socket.CLOSED || socket.readyState === socket.CLOSING) this.detach(c);
        },
        () => socket.close(4401, 'unauthorized'),
      );
    });
  }

  private async authenticate(socket: WebSocket, message: Record<string, unknown> | null): Promise<Connection> {
    if (message?.type !== 'auth' || typeof message.token !== 'string')
      throw new Error('the first message must be {"type":"auth","token":…}');
    const principal: Principal = await this.kernel.authenticator.authenticate(message.token);
    const last = message.last_notification_id ?? message.lastNotificationId;
    const lastId = typeof last === 'string' ? (UUID.test(last) ? last : '00000000-0000-0000-0000-000000000000') : null;
    const c: Connection = {
      key: `${principal.tenantId}:${principal.userId}`,
      socket,
      sent: new Set(),
      pending: [],
      ...(principal.expiresAt === undefined ? {} : { expiresAt: principal.expiresAt }),
    };
    this.attach(c);
    try {
      await this.ready();
      // spec 002: after a reconnect the server replays up to 100 messages of the hour's buffer; a
      // client that names no last message gets them all (it deduplicates by notification_id)
      const missed = await this.replay(principal.tenantId, principal.userId, lastId);
      for (const payload of missed) sendNotification(c, payload, true);
      send(c, { type: 'ready', user_id: principal.userId, replayed: missed.length });
      const live = c.pending ?? [];
      c.pending = null;
      for (const payload of live) sendNotification(c, payload);
      return c;
    } catch (error) {
      this.detach(c);
      socket.close(1011, 'the socket service is unavailable; retry');
      throw error;
    }
  }
}

const parseMessage = (raw: unknown): Record<string, unknown> | null => {
  try {
    const value: unknown = JSON.parse(String(raw));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
};

const hubs = new WeakMap<Kernel, SocketHub>();
export const socketHub = (kernel: Kernel): SocketHub => {
  let hub = hubs.get(kernel);
  if (!hub) {
    hub = new SocketHub(kernel);
    hubs.set(kernel, hub);
  }
  return hub;
};
