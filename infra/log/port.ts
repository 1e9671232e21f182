/**
 * The log: topics split into partitions, records placed by key, consumer groups with committed
 * offsets. Two adapters implement it and pass one contract suite (tests/int/log/contract.ts):
 * Kafka (production) and a PostgreSQL-backed log (embedded default).
 *
 * Placement is the same in both: partition = murmur2(key) mod partitions, as Kafka's Java client
 * and kafkajs' default partitioner compute it, so a record lands on the same partition whichever
 * adapter wrote it.
 */
export interface TopicSpec {
  name: string;
  partitions: number;
  /** records older than this may be deleted */
  retentionMs: number;
}

export interface OutgoingRecord {
  key: string;
  value: string; // JSON text
  headers?: Record<string, string>;
  /** epoch ms; defaults to now */
  timestamp?: number;
}

export interface LogRecord {
  topic: string;
  partition: number;
  offset: number;
  key: string;
  value: string;
  headers: Record<string, string>;
  timestamp: number;
}

export interface PartitionPosition {
  partition: number;
  /** next offset the group will read (committed); 0 when nothing was committed */
  currentOffset: number;
  /** offset the next appended record will get */
  logEndOffset: number;
  lag: number;
}

export interface SubscribeOptions {
  groupId: string;
  topics: string[];
  /** where a group with no committed offset starts: earliest (default) or latest */
  start?: 'earliest' | 'latest';
  /** called with records of one partition, in offset order; offsets are committed after it resolves */
  eachBatch: (records: LogRecord[]) => Promise<void>;
  /** largest batch handed to eachBatch (default 500) */
  maxBatch?: number;
}

/** a consumer group member subscribed to topics (not a bus subscription, nor a billing one) */
export interface LogConsumer {
  /** stops fetching, waits for the batch in flight and commits its offsets */
  stop(): Promise<void>;
}

export type SeekTarget = { offset: number } | { timestamp: number } | { offsets: Record<number, number> };

export interface LogPort {
  readonly kind: 'kafka' | 'postgres';
  ensureTopics(topics: TopicSpec[]): Promise<void>;
  partitionsOf(topic: string): Promise<number>;
  /** Appends records; resolves once they are durable. Records with the same key keep their order. */
  publish(topic: string, records: OutgoingRecord[]): Promise<void>;
  subscribe(options: SubscribeOptions): Promise<LogConsumer>;
  /** committed position and lag of a consumer group, per partition */
  positions(groupId: string, topic: string): Promise<PartitionPosition[]>;
  /** moves a group's committed offsets (all partitions to an offset, to the first record at or after a time, or per partition). The group must not be running. */
  seek(groupId: string, topic: string, target: SeekTarget): Promise<void>;
  /** earliest offset whose timestamp is at or after the given time, per partition (log end when none) */
  offsetsForTime(topic: string, timestamp: number): Promise<Record<number, number>>;
  /** reads records of one partition from an offset, without a consumer group (replay, inspection) */
  read(topic: string, partition: number, fromOffset: number, maxRecords: number): Promise<LogRecord[]>;
  /** throws when the log cannot be reached */
  ping(): Promise<void>;
  close(): Promise<void>;
}
