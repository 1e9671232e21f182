import { Redis } from 'ioredis';
import pg from 'pg';
import type { Kernel } from '../../../infra/kernel';
import type { BoundStatement } from '../../../infra/postgres/inline';

/** what a real-time client receives for one notification (every message carries notification_id) */
export interface SocketPayload {
  type: 'notification';
  notification_id: string;
  subject: string;
  body: string;
  format: 'text' | 'html';
  priority: string;
  data: Record<string, unknown>;
  created_at: string;
}

/** one delivered message on its way to the processes that hold the user's sockets */
export interface SocketEnvelope {
  tenantId: string;
  userId: string;
  /** its place in notify.socket_buffer: orders one user's messages */
  seq: number;
  notificationId: string;
  /** absent when too large for the transport: read from the buffer by seq */
  payload: SocketPayload | null;
}

/**
 * Fan-out of websocket deliveries to every process serving sockets: Redis pub/sub when REDIS_URL
 * is set, PostgreSQL LISTEN/NOTIFY otherwise (so several processes work without Redis too).
 * Either way delivery is at most once per process; the buffer (notify.socket_buffer) is what a
 * reconnecting client replays from, so a message missed live is not lost.
 */
export interface SocketBus {
  readonly kind: 'redis' | 'postgres';
  /** publishes deliveries in order, in one round trip */
  publish(envelopes: readonly SocketEnvelope[]): Promise<void>;
  /**
   * the statement that publishes deliveries when the transaction it runs in commits (PostgreSQL:
   * NOTIFY is sent at commit, never on rollback), or null when the bus can only publish after the
   * commit (Redis: the caller calls publish once committed)
   */
  publishOnCommit(envelopes: readonly SocketEnvelope[]): BoundStatement | null;
  /** resolves once messages published from now on reach the listener */
  subscribe(listener: (envelope: SocketEnvelope) => void): Promise<void>;
  close(): Promise<void>;
}

const CHANNEL = 'notify_socket';
/** NOTIFY payloads are limited to 8000 bytes */
const PG_PAYLOAD_LIMIT = 7_000;

const parse = (text: string): SocketEnvelope | null => {
  try {
    const e = JSON.parse(text) as SocketEnvelope;
    return typeof e.tenantId === 'string' && typeof e.userId === 'string' && typeof e.seq === 'number' ? e : null;
  } catch {
    return null;
  }
};

class RedisSocketBus implements SocketBus {
  readonly kind = 'redis' as const;
  private readonly publisher: Redis;
  private subscriber: Redis | null = null;
  private readonly channel: string;

  constructor(
    private readonly url: string,
    private readonly onError: (error: Error) => void,
  ) {
    // a publish waits for the connection at most 5 s: then the delivery is retried (the buffer keeps the message for replay meanwhile)
    this.publisher = new Redis(url, { maxRetriesPerRequest: 1, commandTimeout: 5_000 });
    this.publisher.on('error', onError);
    this.channel = `platform:${CHANNEL}`;
  }

  async publish(envelopes: readonly SocketEnvelope[]): Promise<void> {
    if (envelopes.length === 0) return;
    const pipeline = this.publisher.pipeline();
    for (const envelope of envelopes) pipeline.publish(this.channel, JSON.stringify(envelope));
    const error = (await pipeline.exec())?.find(([failed]) => failed)?.[0];
    if (error) throw error;
  }

  publishOnCommit(): null {
    return null;
  }

  async subscribe(listener: (envelope: SocketEnvelope) => void): Promise<void> {
    const subscriber = new Redis(this.url, { maxRetriesPerRequest: null });
    subscriber.on('error', this.onError);
    subscriber.on('message', (_channel: string, message: string) => {
      const envelope = parse(message);
      if (envelope) listener(envelope);
    });
    await subscriber.subscribe(this.channel);
    this.subscriber = subscriber;
  }

  async close(): Promise<void> {
    this.subscriber?.disconnect();
    this.publisher.disconnect();
  }
}

class PostgresSocketBus implements SocketBus {
  readonly kind = 'postgres' as const;
  private client: pg.Client | null = null;

  constructor(
    private readonly pool: pg.Pool,
    private readonly onError: (error: Error) => void,
  ) {}

  async publish(envelopes: readonly SocketEnvelope[]): Promise<void> {
    if (envelopes.length === 0) return;
    const { text, values } = this.publishOnCommit(envelopes);
    await this.pool.query(text, values);
  }

  publishOnCommit(envelopes: readonly SocketEnvelope[]): BoundStatement {
    const texts = envelopes.map((envelope) => {
      const text = JSON.stringify(envelope);
      return Buffer.byteLength(text) > PG_PAYLOAD_LIMIT ? JSON.stringify({ ...envelope, payload: null }) : text;
    });
    // one statement, one transaction: the notifications go out in the array's order when it commits
    return { text: 'SELECT pg_notify($1, t) FROM unnest($2::text[]) AS t', values: [CHANNEL, texts] };
  }

  async subscribe(listener: (envelope: SocketEnvelope) => void): Promise<void> {
    // a connection of its own for the whole life of the process: LISTEN holds it
    const client = new pg.Client({
      ...this.pool.options,
      application_name: `${this.pool.options.application_name ?? 'platform'}/notify-socket`.slice(0, 63),
      keepAlive: true,
    });
    client.on('error', this.onError);
    client.on('notification', (n) => {
      const envelope = n.payload ? parse(n.payload) : null;
      if (envelope) listener(envelope);
    });
    await client.connect();
    await client.query(`LISTEN ${CHANNEL}`);
    this.client = client;
  }

  async close(): Promise<void> {
    await this.client?.end().catch(() => undefined);
  }
}

const buses = new WeakMap<Kernel, SocketBus>();

/** the process's bus, opened on first use and closed with the kernel */
export const socketBus = (kernel: Kernel): SocketBus => {
  let bus = buses.get(kernel);
  if (!bus) {
    const onError = (error: Error) => kernel.logger.warn({ err: error }, 'notify socket bus connection failed');
    const opened = kernel.config.REDIS_URL
      ? new RedisSocketBus(kernel.config.REDIS_URL, onError)
      : new PostgresSocketBus(kernel.db, onError);
    bus = opened;
    buses.set(kernel, opened);
    kernel.onClose('notify.socket-bus', () => opened.close());
  }
  return bus;
};
