/** Helpers for the log contract: unique names, record builders, and a consumer that remembers. */
import { randomBytes } from 'node:crypto';
import type { LogPort, LogRecord, OutgoingRecord, SubscribeOptions, LogConsumer } from '../../../infra/log/port';
import { partitionForKey } from '../../../infra/log/murmur2';
import { pollUntil } from '../../support/poll';

export const RETENTION_WEEK = 7 * 24 * 3600 * 1000;

/** Unique per test, so tests on a shared broker or database never see each other's records. */
export const uniqueName = (label: string): string => `test.${label}.${randomBytes(5).toString('hex')}`;

export const newTopic = async (log: LogPort, partitions: number, label = 'topic'): Promise<string> => {
  const name = uniqueName(label);
  await log.ensureTopics([{ name, partitions, retentionMs: RETENTION_WEEK }]);
  return name;
};

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export const waitFor = async (condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> => {
  await pollUntil(async () => condition(), Boolean, { timeoutMs, everyMs: 20, what });
};

/** A record whose value says which key and which step of that key it is. */
export const event = (key: string, seq: number, extra: Partial<OutgoingRecord> = {}): OutgoingRecord => ({
  key,
  value: JSON.stringify({ key, seq }),
  ...extra,
});

export const seqOf = (record: LogRecord): number => (JSON.parse(record.value) as { seq: number }).seq;

/** keys entity-0 … entity-(n-1), one record each */
export const oneEachFor = (keys: number): OutgoingRecord[] =>
  Array.from({ length: keys }, (_, i) => event(`entity-${i}`, 0));

export const id = (r: Pick<LogRecord, 'partition' | 'offset'>): string => `${r.partition}:${r.offset}`;

/** Where each published record must be: its partition by key, its offset by publish order. */
export const expectedPlacement = (records: OutgoingRecord[], partitions: number, already: number[] = []): string[] => {
  const next = Array.from({ length: partitions }, (_, p) => already[p] ?? 0);
  return records.map((r) => {
    const partition = partitionForKey(r.key, partitions);
    const offset = next[partition]!;
    next[partition] = offset + 1;
    return `${partition}:${offset}`;
  });
};

export const logEnds = (records: OutgoingRecord[], partitions: number): number[] => {
  const ends = Array.from({ length: partitions }, () => 0);
  for (const r of records) ends[partitionForKey(r.key, partitions)]! += 1;
  return ends;
};

/** Every record a log holds, partition by partition. */
export const readAll = async (log: LogPort, topic: string): Promise<LogRecord[]> => {
  const partitions = await log.partitionsOf(topic);
  const all: LogRecord[] = [];
  for (let p = 0; p < partitions; p++) all.push(...(await log.read(topic, p, 0, 100_000)));
  return all;
};

export interface Member {
  readonly batches: LogRecord[][];
  readonly records: LogRecord[];
  readonly subscription: LogConsumer;
  ids(): string[];
  until(count: number, what?: string): Promise<void>;
  stop(): Promise<void>;
}

type MemberOptions = Partial<Omit<SubscribeOptions, 'eachBatch'>> & {
  /** runs before the batch is recorded; throw to fail it */
  onBatch?: (batch: LogRecord[]) => Promise<void>;
};

/** Subscribes and keeps every batch it is handed. */
export const join = async (
  log: LogPort,
  groupId: string,
  topics: string[],
  options: MemberOptions = {},
): Promise<Member> => {
  const batches: LogRecord[][] = [];
  const records: LogRecord[] = [];
  const { onBatch, ...subscribeOptions } = options;
  const subscription = await log.subscribe({
    groupId,
    topics,
    ...subscribeOptions,
    eachBatch: async (batch) => {
      await onBatch?.(batch);
      batches.push(batch);
      records.push(...batch);
    },
  });
  return {
    batches,
    records,
    subscription,
    ids: () => records.map(id),
    until: (count, what = `${count} records`) => waitFor(() => records.length >= count, what),
    stop: () => subscription.stop(),
  };
};
