/**
 * The log on Apache Kafka (production), through kafkajs.
 *
 * The producer is idempotent with acks=all and one request in flight, so a retried send can neither
 * duplicate nor reorder records: per-key order holds even when brokers fail over. Placement is
 * kafkajs' DefaultPartitioner (murmur2, identical to ./murmur2 and to the Java client).
 */
import {
  Kafka,
  Partitioners,
  logLevel as KafkaLogLevel,
  type Admin,
  type ConsumerConfig,
  type KafkaConfig,
  type LogEntry,
  type Producer,
  type logCreator,
} from 'kafkajs';
import { stderrLogger, type Logger } from './logger';
import type {
  LogPort,
  LogRecord,
  OutgoingRecord,
  PartitionPosition,
  SeekTarget,
  SubscribeOptions,
  LogConsumer,
  TopicSpec,
} from './port';
import { KafkaLogConsumer, readPartition } from './kafka-log-consumers';
import {
  clampOffset,
  sleep,
  LogConsumerSet,
  validateSubscribeOptions,
  validateTopicSpecs,
  withTimeout,
} from './support';

export interface KafkaLogOptions {
  brokers: string[];
  clientId?: string;
  /** receives kafkajs' own log lines at kafkaLogLevel and above */
  logger?: Logger;
  /** default WARN: kafkajs is chatty at INFO (every join, every rebalance) */
  kafkaLogLevel?: KafkaLogLevel;
  /** default: the broker's default.replication.factor */
  replicationFactor?: number;
  pingTimeoutMs?: number;
  readTimeoutMs?: number;
  /** tuning for subscription consumers; groupId comes from subscribe() */
  consumer?: Partial<Omit<ConsumerConfig, 'groupId'>>;
  /** TLS, SASL, timeouts and retries, passed to kafkajs as they are */
  kafka?: Omit<KafkaConfig, 'brokers' | 'clientId' | 'logLevel' | 'logCreator'>;
}

/** A connection made on first use and shared; a failed attempt is forgotten so the next call retries. */
class Connected<T> {
  private connecting: Promise<T> | undefined;
  constructor(private readonly connect: () => Promise<T>) {}
  get(): Promise<T> {
    this.connecting ??= this.connect().catch((error: unknown) => {
      this.connecting = undefined;
      throw error;
    });
    return this.connecting;
  }
  started(): Promise<T> | undefined {
    return this.connecting;
  }
}

export class KafkaLog implements LogPort {
  readonly kind = 'kafka' as const;
  private readonly kafka: Kafka;
  private readonly clientId: string;
  private readonly producer: Connected<Producer>;
  private readonly admin: Connected<Admin>;
  private readonly subscriptions = new LogConsumerSet<LogConsumer>();

  constructor(private readonly options: KafkaLogOptions) {
    this.clientId = options.clientId ?? 'platform';
    this.kafka = new Kafka({
      ...options.kafka,
      brokers: options.brokers,
      clientId: this.clientId,
      logLevel: options.kafkaLogLevel ?? KafkaLogLevel.WARN,
      logCreator: routeLogsTo(options.logger ?? stderrLogger),
    });
    this.producer = new Connected(async () => {
      const producer = this.kafka.producer({
        idempotent: true,
        maxInFlightRequests: 1,
        allowAutoTopicCreation: false,
        createPartitioner: Partitioners.DefaultPartitioner,
      });
      await producer.connect();
      return producer;
    });
    this.admin = new Connected(async () => {
      const admin = this.kafka.admin();
      await admin.connect();
      return admin;
    });
  }

  /** Creates missing topics; an existing topic keeps its partitions and retention. */
  async ensureTopics(topics: TopicSpec[]): Promise<void> {
    validateTopicSpecs(topics);
    const admin = await this.admin.get();
    // Roles starting together create the same topics at once: the loser's wait for leaders can meet
    // UNKNOWN_TOPIC_OR_PARTITION (retriable) before the winner's topic reaches every broker's metadata.
    const missing = await retryRetriable(async () => {
      const existing = new Set(await admin.listTopics());
      const absent = topics.filter((t) => !existing.has(t.name));
      if (absent.length === 0) return absent;
      // Another process may create the same topics meanwhile; kafkajs then answers false, not an error.
      await admin.createTopics({
        waitForLeaders: true,
        topics: absent.map((t) => ({
          topic: t.name,
          numPartitions: t.partitions,
          replicationFactor: this.options.replicationFactor ?? -1,
          configEntries: [{ name: 'retention.ms', value: String(t.retentionMs) }],
        })),
      });
      return absent;
    });
    // Resolve only once every new partition has a leader that serves offsets, so reads can follow at once.
    for (const t of missing) await this.topicOffsets(t.name);
  }

  private async topicOffsets(topic: string): Promise<Array<{ partition: number; low: number; high: number }>> {
    const admin = await this.admin.get();
    const offsets = await retryRetriable(() => admin.fetchTopicOffsets(topic));
    return offsets.map((o) => ({ partition: o.partition, low: Number(o.low), high: Number(o.high) }));
  }

  async partitionsOf(topic: string): Promise<number> {
    const admin = await this.admin.get();
    const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
    const partitions = topics[0]?.partitions.length;
    if (!partitions) throw new Error(`unknown topic ${topic}`);
    return partitions;
  }

  async publish(topic: string, records: OutgoingRecord[]): Promise<void> {
    if (records.length === 0) return;
    const producer = await this.producer.get();
    const now = Date.now();
    // A partition's record batch must stay under the broker's message.max.bytes (1 MiB by
    // default): large publishes go out as consecutive sends of at most ~512 KiB, in order.
    for (const chunk of chunksBySize(records, 512 * 1024)) {
      await producer.send({
        topic,
        acks: -1,
        messages: chunk.map((r) => ({
          key: r.key,
          value: r.value,
          headers: r.headers,
          timestamp: String(r.timestamp ?? now),
        })),
      });
    }
  }

  async subscribe(options: SubscribeOptions): Promise<LogConsumer> {
    validateSubscribeOptions(options);
    // the broker holds an empty fetch this long; a stop (every drain) waits for the fetch in flight,
    // so a quarter second bounds that wait (Kafka's own clients hold 500 ms; kafkajs' default is 5 s)
    const consumerConfig = { maxWaitTimeInMs: 250, ...this.options.consumer };
    const subscription = await KafkaLogConsumer.start(this.kafka, options, consumerConfig);
    return this.subscriptions.add(subscription);
  }

  async positions(groupId: string, topic: string): Promise<PartitionPosition[]> {
    const admin = await this.admin.get();
    const [committed] = await retryRetriable(() => admin.fetchOffsets({ groupId, topics: [topic] }));
    const ends = await this.topicOffsets(topic);
    return ends
      .map(({ partition, high }) => {
        // kafkajs reports "-1" for a partition the group never committed.
        const offset = Number(committed?.partitions.find((p) => p.partition === partition)?.offset ?? -1);
        const currentOffset = Math.max(0, offset);
        const logEndOffset = high;
        return { partition, currentOffset, logEndOffset, lag: Math.max(0, logEndOffset - currentOffset) };
      })
      .sort((a, b) => a.partition - b.partition);
  }

  /** kafkajs' setOffsets refuses when the group has running members, as the port requires. */
  async seek(groupId: string, topic: string, target: SeekTarget): Promise<void> {
    const bounds = await this.topicOffsets(topic);
    const offsets = await this.seekOffsets(topic, target, bounds);
    const partitions = Object.entries(offsets).map(([partition, offset]) => {
      const b = bounds.find((p) => p.partition === Number(partition));
      if (!b) throw new Error(`topic ${topic} has no partition ${partition}`);
      return { partition: b.partition, offset: String(clampOffset(offset, b.low, b.high)) };
    });
    if (partitions.length === 0) return;
    // setOffsets joins the group with a paused consumer and leaves after its first (idle) fetch,
    // which kafkajs spaces by 5 s: a seek takes about that long.
    const admin = await this.admin.get();
    await admin.setOffsets({ groupId, topic, partitions });
  }

  private async seekOffsets(
    topic: string,
    target: SeekTarget,
    bounds: Array<{ partition: number }>,
  ): Promise<Record<number, number>> {
    if ('offsets' in target) return target.offsets;
    if ('timestamp' in target) return this.offsetsForTime(topic, target.timestamp);
    return Object.fromEntries(bounds.map((b) => [b.partition, target.offset]));
  }

  async offsetsForTime(topic: string, timestamp: number): Promise<Record<number, number>> {
    const admin = await this.admin.get();
    // kafkajs already answers the log end for partitions with nothing at or after the time.
    const offsets = await retryRetriable(() => admin.fetchTopicOffsetsByTimestamp(topic, timestamp));
    return Object.fromEntries(offsets.map((o) => [o.partition, Number(o.offset)]));
  }

  /** Costs a consumer-group join per call; see readPartition. */
  async read(topic: string, partition: number, fromOffset: number, maxRecords: number): Promise<LogRecord[]> {
    if (maxRecords < 1) return [];
    return readPartition(this.kafka, await this.admin.get(), {
      topic,
      partition,
      fromOffset,
      maxRecords,
      timeoutMs: this.options.readTimeoutMs ?? 30_000,
      groupPrefix: this.clientId,
      topicOffsets: (t) => this.topicOffsets(t),
    });
  }

  async ping(): Promise<void> {
    const timeoutMs = this.options.pingTimeoutMs ?? 3_000;
    await withTimeout(
      this.admin.get().then((admin) => admin.describeCluster()),
      timeoutMs,
      'kafka ping',
    );
  }

  async close(): Promise<void> {
    await this.subscriptions.stopAll();
    await Promise.allSettled(
      [this.producer, this.admin].map(async (connected) => (await connected.started())?.disconnect()),
    );
  }
}

/**
 * Retries a call that failed with an error Kafka marks retriable. kafkajs' offset lookups give up
 * on the first NOT_LEADER_OR_FOLLOWER, which a new topic answers for a moment after creation and
 * any topic answers during a leader failover.
 */
const retryRetriable = async <T>(call: () => Promise<T>, attempts = 20): Promise<T> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (attempt >= attempts || !isRetriable(error)) throw error;
      await sleep(Math.min(1_000, 50 * attempt));
    }
  }
};

const isRetriable = (error: unknown): boolean => {
  const e = error as { retriable?: boolean; cause?: { retriable?: boolean } } | undefined;
  return e?.retriable === true || e?.cause?.retriable === true;
};

/** kafkajs log lines → the platform logger, with kafkajs' namespace kept as a field. */
const routeLogsTo =
  (logger: Logger): logCreator =>
  () =>
  ({ namespace, level, log }: LogEntry) => {
    const { message, timestamp: _timestamp, ...fields } = log;
    const entry = { ...fields, kafka: namespace };
    if (level === KafkaLogLevel.ERROR) logger.error(entry, message);
    else if (level === KafkaLogLevel.WARN) logger.warn(entry, message);
    else if (level === KafkaLogLevel.INFO) logger.info(entry, message);
    else logger.debug(entry, message);
  };

/** splits records into consecutive chunks of at most maxBytes (approximate: key + value + headers) */
export const chunksBySize = (records: OutgoingRecord[], maxBytes: number): OutgoingRecord[][] => {
  const chunks: OutgoingRecord[][] = [];
  let current: OutgoingRecord[] = [];
  let size = 0;
  for (const r of records) {
    const bytes =
      Buffer.byteLength(r.key) +
      Buffer.byteLength(r.value) +
      Object.entries(r.headers ?? {}).reduce((n, [k, v]) => n + k.length + v.length, 0) +
      64;
    if (current.length > 0 && size + bytes > maxBytes) {
      chunks.push(current);
      current = [];
      size = 0;
    }
    current.push(r);
    size += bytes;
  }
  if (current.length) chunks.push(current);
  return chunks;
};
