/**
 * The two ways KafkaLog reads: a consumer-group member (subscribe) and a throw-away consumer that
 * replays one partition range (read). kafkajs has no group-less fetch, hence the second one.
 */
import { randomUUID } from 'node:crypto';
import type { Admin, Consumer, ConsumerConfig, EachBatchPayload, IHeaders, Kafka, KafkaMessage } from 'kafkajs';
import type { LogRecord, SubscribeOptions, LogConsumer } from './port';
import { chunk, lastOf, withTimeout } from './support';

const DEFAULT_MAX_BATCH = 500;

export const toLogRecord = (topic: string, partition: number, message: KafkaMessage): LogRecord => ({
  topic,
  partition,
  offset: Number(message.offset),
  key: message.key?.toString('utf8') ?? '',
  value: message.value?.toString('utf8') ?? '',
  headers: headersToStrings(message.headers),
  timestamp: Number(message.timestamp),
});

const headersToStrings = (headers: IHeaders | undefined): Record<string, string> => {
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined) result[name] = first.toString();
  }
  return result;
};

/**
 * Hands a fetched batch over in chunks of maxBatch and commits each chunk once eachBatch resolved.
 * It commits through the payload rather than consumer.commitOffsets, which kafkajs skips once
 * stop() began: stop() must still commit the chunk that was in flight.
 */
const deliverBatch =
  (options: SubscribeOptions) =>
  async (payload: EachBatchPayload): Promise<void> => {
    const { batch } = payload;
    const records = batch.messages.map((m) => toLogRecord(batch.topic, batch.partition, m));
    for (const part of chunk(records, options.maxBatch ?? DEFAULT_MAX_BATCH)) {
      if (!payload.isRunning() || payload.isStale()) return;
      await options.eachBatch(part);
      payload.resolveOffset(String(lastOf(part).offset));
      await payload.commitOffsetsIfNecessary(payload.uncommittedOffsets());
      // Throws when the group rebalances; kafkajs then rejoins, and what was committed stays committed.
      await payload.heartbeat();
    }
  };

export class KafkaLogConsumer implements LogConsumer {
  private stopped: Promise<void> | undefined;

  private constructor(private readonly consumer: Consumer) {}

  /** Resolves once the member joined its group (kafkajs' run() waits for join and sync). */
  static async start(
    kafka: Kafka,
    options: SubscribeOptions,
    consumerConfig: Partial<ConsumerConfig>,
  ): Promise<KafkaLogConsumer> {
    const consumer = kafka.consumer({ ...consumerConfig, groupId: options.groupId, allowAutoTopicCreation: false });
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: options.topics, fromBeginning: (options.start ?? 'earliest') === 'earliest' });
      await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: deliverBatch(options) });
    } catch (error) {
      await consumer.disconnect().catch(() => undefined);
      throw error;
    }
    return new KafkaLogConsumer(consumer);
  }

  /** kafkajs' disconnect waits for the batch in flight, then leaves the group. */
  stop(): Promise<void> {
    this.stopped ??= this.consumer.disconnect();
    return this.stopped;
  }
}

export interface PartitionRead {
  topic: string;
  partition: number;
  fromOffset: number;
  maxRecords: number;
  timeoutMs: number;
  groupPrefix: string;
  topicOffsets: (topic: string) => Promise<Array<{ partition: number; low: number; high: number }>>;
}

/**
 * Reads a range of one partition with a consumer in a fresh, random group: it joins that group,
 * seeks, fetches until the range is covered, leaves, and deletes the group. Cost per call: one
 * group join and sync (plus the broker's group.initial.rebalance.delay.ms, 3 s by default, 0 in
 * the test broker) and a fetch; fine for inspection and replay tooling, wrong for hot paths. For
 * bulk replay, subscribe with a new group and seek it instead.
 */
export const readPartition = async (kafka: Kafka, admin: Admin, read: PartitionRead): Promise<LogRecord[]> => {
  const offsets = await read.topicOffsets(read.topic);
  const bounds = offsets.find((p) => p.partition === read.partition);
  if (!bounds) throw new Error(`topic ${read.topic} has no partition ${read.partition}`);
  const start = Math.max(read.fromOffset, bounds.low);
  const end = Math.min(bounds.high, start + read.maxRecords);
  if (start >= end) return [];

  const groupId = `${read.groupPrefix}.read.${randomUUID()}`;
  const consumer = kafka.consumer({ groupId, allowAutoTopicCreation: false, maxWaitTimeInMs: 100 });
  try {
    const others = offsets.map((p) => p.partition).filter((p) => p !== read.partition);
    const records = await withTimeout(
      collectRange(consumer, read, { start, end, others }),
      read.timeoutMs,
      `kafka read of ${read.topic}/${read.partition}`,
    );
    return records.slice(0, read.maxRecords);
  } finally {
    await consumer.disconnect().catch(() => undefined);
    await admin.deleteGroups([groupId]).catch(() => undefined);
  }
};

interface Range {
  start: number;
  end: number;
  /** the topic's other partitions, paused so the throw-away consumer does not fetch them */
  others: number[];
}

const collectRange = async (
  consumer: Consumer,
  read: PartitionRead,
  { start, end, others }: Range,
): Promise<LogRecord[]> => {
  const collected = new Map<number, LogRecord>();
  let covered!: () => void;
  const done = new Promise<void>((resolve) => (covered = resolve));
  await consumer.connect();
  await consumer.subscribe({ topics: [read.topic], fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachBatch: async ({ batch }) => {
      if (batch.partition !== read.partition) return;
      for (const message of batch.messages) {
        const offset = Number(message.offset);
        if (offset >= start && offset < end) collected.set(offset, toLogRecord(batch.topic, batch.partition, message));
      }
      // lastOffset counts records kafkajs filtered out (transaction markers), so gaps cannot stall us.
      if (collected.size >= end - start || Number(batch.lastOffset()) >= end - 1) covered();
    },
  });
  if (others.length > 0) consumer.pause([{ topic: read.topic, partitions: others }]);
  // Records before start may still arrive from the first fetch; they are filtered above.
  consumer.seek({ topic: read.topic, partition: read.partition, offset: String(start) });
  await done;
  return [...collected.values()].sort((a, b) => a.offset - b.offset);
};
