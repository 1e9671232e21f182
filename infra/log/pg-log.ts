/**
 * The log on PostgreSQL (schema log, migration 0002_log.sql): the embedded default behind the same
 * LogPort as Kafka. Records are placed by murmur2 like Kafka's, offsets are dense per partition and
 * become visible in offset order, consumer groups commit the next offset to read.
 *
 * The pool belongs to the caller; each subscription additionally holds one dedicated connection
 * (see GroupSession) for its whole life.
 */
import type pg from 'pg';
import { stderrLogger, type Logger } from './logger';
import { partitionForKey } from './murmur2';
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
import { NOTIFY_CHANNEL, partitionLockName } from './pg-log-session';
import { PgLogConsumer } from './pg-log-consumer';
import { recordColumns, toLogRecord, tsFromMillis, type RecordRow } from './pg-log-rows';
import { clampOffset, LogConsumerSet, validateSubscribeOptions, validateTopicSpecs, withTimeout } from './support';

export interface PgLogOptions {
  /** how often an idle subscription looks for records when no NOTIFY arrives (default 100 ms) */
  pollIntervalMs?: number;
  /** how often members re-share partitions and take over those of dead members (default 1000 ms) */
  rebalanceIntervalMs?: number;
  pingTimeoutMs?: number;
  /** offsets deleted per statement by purgeExpired, to keep each delete short (default 10 000) */
  purgeChunk?: number;
  logger?: Logger;
  /** epoch ms stamped on records published without a timestamp */
  clock?: () => number;
}

interface PartitionBounds {
  partition: number;
  logStart: number;
  logEnd: number;
}

export class PgLog implements LogPort {
  readonly kind = 'postgres' as const;
  private readonly partitionCounts = new Map<string, number>();
  private readonly subscriptions = new LogConsumerSet<PgLogConsumer>();
  private readonly logger: Logger;
  private readonly clock: () => number;

  constructor(
    private readonly pool: pg.Pool,
    private readonly options: PgLogOptions = {},
  ) {
    this.logger = options.logger ?? stderrLogger;
    this.clock = options.clock ?? Date.now;
  }

  /** Creates missing topics; an existing topic keeps its partitions and retention. */
  async ensureTopics(topics: TopicSpec[]): Promise<void> {
    validateTopicSpecs(topics);
    if (topics.length === 0) return;
    await this.transaction(async (client) => {
      await client.query(
        `insert into log.topics (name, partitions, retention_ms)
         select * from unnest($1::text[], $2::int[], $3::bigint[]) on conflict (name) do nothing`,
        [topics.map((t) => t.name), topics.map((t) => t.partitions), topics.map((t) => t.retentionMs)],
      );
      await client.query(
        `insert into log.partition_heads (topic, partition)
         select t.name, p from log.topics t, generate_series(0, t.partitions - 1) p
          where t.name = any($1::text[]) on conflict do nothing`,
        [topics.map((t) => t.name)],
      );
    });
  }

  async partitionsOf(topic: string): Promise<number> {
    // Partition counts never change here (ensureTopics leaves existing topics alone), so caching is safe.
    const cached = this.partitionCounts.get(topic);
    if (cached !== undefined) return cached;
    const { rows } = await this.pool.query<{ partitions: number }>(
      'select partitions from log.topics where name = $1',
      [topic],
    );
    const partitions = rows[0]?.partitions;
    if (partitions === undefined) throw unknownTopic(topic);
    this.partitionCounts.set(topic, partitions);
    return partitions;
  }

  /**
   * One transaction; partitions are appended in ascending order so that two publishers touching
   * the same partitions always lock their heads in the same order and cannot deadlock.
   */
  async publish(topic: string, records: OutgoingRecord[]): Promise<void> {
    if (records.length === 0) return;
    const count = await this.partitionsOf(topic);
    const placed = records.map((r) => partitionForKey(r.key, count));
    const now = this.clock();
    // one statement (its own transaction): a publish costs one round trip whatever its partitions
    const { rows } = await this.pool.query<{ partitions: string }>(PUBLISH, [
      topic,
      placed,
      records.map((r) => r.key),
      records.map((r) => r.value),
      records.map((r) => JSON.stringify(r.headers ?? {})),
      records.map((r) => r.timestamp ?? now),
      NOTIFY_CHANNEL,
    ]);
    if (Number(rows[0]?.partitions) !== new Set(placed).size) throw new Error(`unknown partition of ${topic}`);
  }

  async subscribe(options: SubscribeOptions): Promise<LogConsumer> {
    validateSubscribeOptions(options);
    for (const topic of options.topics) await this.partitionsOf(topic);
    const subscription = await PgLogConsumer.start({
      pool: this.pool,
      options,
      partitionsOf: (topic) => this.partitionsOf(topic),
      pollIntervalMs: this.options.pollIntervalMs ?? 100,
      rebalanceIntervalMs: this.options.rebalanceIntervalMs ?? 1_000,
      logger: this.logger,
    });
    return this.subscriptions.add(subscription);
  }

  async positions(groupId: string, topic: string): Promise<PartitionPosition[]> {
    const { rows } = await this.pool.query<{ partition: number; next_offset: string; committed_offset: string | null }>(
      `select h.partition, h.next_offset, g.committed_offset
         from log.partition_heads h
         left join log.group_offsets g on g.group_id = $1 and g.topic = h.topic and g.partition = h.partition
        where h.topic = $2 order by h.partition`,
      [groupId, topic],
    );
    if (rows.length === 0) throw unknownTopic(topic);
    return rows.map((r) => {
      const currentOffset = Number(r.committed_offset ?? 0);
      const logEndOffset = Number(r.next_offset);
      return { partition: r.partition, currentOffset, logEndOffset, lag: Math.max(0, logEndOffset - currentOffset) };
    });
  }

  /** Refuses while any member of the group owns one of the partitions it would move. */
  async seek(groupId: string, topic: string, target: SeekTarget): Promise<void> {
    await this.transaction(async (client) => {
      const bounds = await partitionBounds(client, topic);
      const offsets = await this.seekOffsets(client, topic, bounds, target);
      await assertGroupIdle(client, groupId, topic, [...offsets.keys()]);
      await client.query(
        `insert into log.group_offsets (group_id, topic, partition, committed_offset)
         select $1, $2, p, o from unnest($3::int[], $4::bigint[]) as t(p, o)
         on conflict (group_id, topic, partition) do update set committed_offset = excluded.committed_offset, updated_at = now()`,
        [groupId, topic, [...offsets.keys()], [...offsets.values()]],
      );
    });
  }

  private async seekOffsets(
    client: pg.ClientBase,
    topic: string,
    bounds: PartitionBounds[],
    target: SeekTarget,
  ): Promise<Map<number, number>> {
    const clampTo = (b: PartitionBounds, offset: number): [number, number] => [
      b.partition,
      clampOffset(offset, b.logStart, b.logEnd),
    ];
    if ('offset' in target) return new Map(bounds.map((b) => clampTo(b, target.offset)));
    if ('timestamp' in target) {
      const byTime = await offsetsAtTime(client, topic, target.timestamp);
      return new Map(bounds.map((b) => clampTo(b, byTime[b.partition] ?? b.logEnd)));
    }
    return new Map(
      Object.entries(target.offsets).map(([partition, offset]) =>
        clampTo(boundsOf(bounds, topic, Number(partition)), offset),
      ),
    );
  }

  async offsetsForTime(topic: string, timestamp: number): Promise<Record<number, number>> {
    const offsets = await offsetsAtTime(this.pool, topic, timestamp);
    if (Object.keys(offsets).length === 0) throw unknownTopic(topic);
    return offsets;
  }

  async read(topic: string, partition: number, fromOffset: number, maxRecords: number): Promise<LogRecord[]> {
    const partitions = await this.partitionsOf(topic);
    if (!Number.isInteger(partition) || partition < 0 || partition >= partitions)
      throw new Error(`topic ${topic} has no partition ${partition}`);
    const { rows } = await this.pool.query<RecordRow>(
      `select ${recordColumns} from log.records
        where topic = $1 and partition = $2 and "offset" >= $3 order by "offset" limit $4`,
      [topic, partition, fromOffset, maxRecords],
    );
    return rows.map(toLogRecord);
  }

  /**
   * Deletes records older than their topic's retention, as a prefix of each partition (the log
   * start moves forward, like Kafka deleting old segments). Offsets are never reused: heads only
   * grow. Returns how many records were deleted. Meant for a periodic worker; topics limits it to
   * some topics (default: all).
   */
  async purgeExpired(options: { now?: number; topics?: string[] } = {}): Promise<number> {
    const now = options.now ?? this.clock();
    const { rows } = await this.pool.query<{ topic: string; partition: number; log_start: string; first_kept: string }>(
      `select h.topic, h.partition,
              coalesce((select r."offset" from log.records r where r.topic = h.topic and r.partition = h.partition
                         order by r."offset" limit 1), h.next_offset) as log_start,
              coalesce((select r."offset" from log.records r where r.topic = h.topic and r.partition = h.partition
                           and r.ts >= ${tsFromMillis('$1')} - t.retention_ms * interval '1 millisecond'
                         order by r."offset" limit 1), h.next_offset) as first_kept
         from log.partition_heads h join log.topics t on t.name = h.topic
        where $2::text[] is null or h.topic = any($2::text[])`,
      [now, options.topics ?? null],
    );
    let deleted = 0;
    for (const r of rows)
      deleted += await this.deletePrefix(r.topic, r.partition, Number(r.log_start), Number(r.first_kept));
    return deleted;
  }

  private async deletePrefix(topic: string, partition: number, logStart: number, firstKept: number): Promise<number> {
    const chunk = this.options.purgeChunk ?? 10_000;
    let deleted = 0;
    for (let from = logStart; from < firstKept; from += chunk) {
      const result = await this.pool.query(
        'delete from log.records where topic = $1 and partition = $2 and "offset" >= $3 and "offset" < $4',
        [topic, partition, from, Math.min(from + chunk, firstKept)],
      );
      deleted += result.rowCount ?? 0;
    }
    return deleted;
  }

  async ping(): Promise<void> {
    await withTimeout(this.pool.query('select 1'), this.options.pingTimeoutMs ?? 2_000, 'postgres log ping');
  }

  /** Stops every subscription; the pool stays open, it belongs to the caller. */
  async close(): Promise<void> {
    await this.subscriptions.stopAll();
  }

  private async transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      await client.query('begin');
      const result = await work(client);
      await client.query('commit');
      return result;
    } catch (error) {
      await client.query('rollback').catch((rollbackError: Error) => {
        broken = rollbackError;
      });
      throw error;
    } finally {
      // A connection that cannot even roll back is discarded rather than returned to the pool.
      client.release(broken);
    }
  }
}

/** Records grouped by partition (ascending), each group in publish order. */
/**
 * Publishes records in one statement. Offsets are allocated under each partition head's row lock,
 * held until the statement commits: a concurrent publisher to the same partition waits, so offsets
 * become visible in offset order. The heads are locked in ascending partition order (two publishers
 * never wait on each other in a cycle). The NOTIFY is delivered when the statement commits.
 * $1 topic, $2-$6 per-record partition, key, value, headers, timestamp (ms), $7 channel.
 */
const PUBLISH = `
  WITH input AS (
    SELECT * FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::bigint[]) WITH ORDINALITY AS r(partition, key, value, headers, ms, ord)),
  counts AS (SELECT partition, count(*) AS n FROM input GROUP BY partition),
  locked AS MATERIALIZED (
    SELECT h.partition FROM log.partition_heads h WHERE h.topic = $1 AND h.partition IN (SELECT partition FROM counts) ORDER BY h.partition FOR UPDATE),
  heads AS (
    UPDATE log.partition_heads h SET next_offset = h.next_offset + c.n FROM counts c, locked l
     WHERE h.topic = $1 AND h.partition = c.partition AND l.partition = c.partition
    RETURNING h.partition, h.next_offset - c.n AS first_offset),
  inserted AS (
    INSERT INTO log.records (topic, partition, "offset", key, value, headers, ts)
    SELECT $1, i.partition, h.first_offset + row_number() OVER (PARTITION BY i.partition ORDER BY i.ord) - 1, i.key, i.value, i.headers::jsonb, ${tsFromMillis('i.ms')}
      FROM input i JOIN heads h ON h.partition = i.partition)
  SELECT (SELECT count(*) FROM heads) AS partitions, pg_notify($7, $1)`;

const partitionBounds = async (db: pg.ClientBase | pg.Pool, topic: string): Promise<PartitionBounds[]> => {
  const { rows } = await db.query<{ partition: number; next_offset: string; log_start: string }>(
    `select h.partition, h.next_offset,
            coalesce((select r."offset" from log.records r where r.topic = h.topic and r.partition = h.partition
                       order by r."offset" limit 1), h.next_offset) as log_start
       from log.partition_heads h where h.topic = $1 order by h.partition`,
    [topic],
  );
  if (rows.length === 0) throw unknownTopic(topic);
  return rows.map((r) => ({ partition: r.partition, logStart: Number(r.log_start), logEnd: Number(r.next_offset) }));
};

const boundsOf = (bounds: PartitionBounds[], topic: string, partition: number): PartitionBounds => {
  const found = bounds.find((b) => b.partition === partition);
  if (!found) throw new Error(`topic ${topic} has no partition ${partition}`);
  return found;
};

const offsetsAtTime = async (
  db: pg.ClientBase | pg.Pool,
  topic: string,
  timestamp: number,
): Promise<Record<number, number>> => {
  const { rows } = await db.query<{ partition: number; offset: string }>(
    `select h.partition,
            coalesce((select min(r."offset") from log.records r
                       where r.topic = h.topic and r.partition = h.partition and r.ts >= ${tsFromMillis('$2')}), h.next_offset) as "offset"
       from log.partition_heads h where h.topic = $1 order by h.partition`,
    [topic, timestamp],
  );
  return Object.fromEntries(rows.map((r) => [r.partition, Number(r.offset)]));
};

/**
 * Takes each partition's lock for the rest of the transaction: it fails while a member owns the
 * partition, and it keeps members from taking the partition while the new offsets are written.
 */
const assertGroupIdle = async (
  client: pg.ClientBase,
  groupId: string,
  topic: string,
  partitions: number[],
): Promise<void> => {
  const { rows } = await client.query<{ name: string }>(
    'select name from unnest($1::text[]) as n(name) where not pg_try_advisory_xact_lock(hashtextextended(name, 0))',
    [partitions.map((p) => partitionLockName(groupId, topic, p))],
  );
  if (rows.length > 0) throw new Error(`consumer group ${groupId} is running on ${topic}; stop it before seeking`);
};

const unknownTopic = (topic: string): Error => new Error(`unknown topic ${topic}`);
