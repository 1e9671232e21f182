/**
 * One member's seat in a consumer group of the Postgres log: a dedicated connection that holds
 * session-level advisory locks. The member lock marks it alive; one lock per owned partition makes
 * that partition exclusive to it. When the process dies or the connection drops, PostgreSQL frees
 * every lock at once, so no lease or heartbeat can go stale.
 *
 * Everything a member does on an owned partition (fetch, commit) goes through this same
 * connection: a commit that succeeds proves the session, and so the lock, was still alive.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { LogRecord } from './port';
import { sessionClient } from '../postgres/db';
import { recordColumns, toLogRecord, type RecordRow } from './pg-log-rows';

export const NOTIFY_CHANNEL = 'platform_log';

/** The advisory-lock name of a partition in a group; seek() takes the same lock to refuse a running group. */
export const partitionLockName = (groupId: string, topic: string, partition: number): string =>
  JSON.stringify(['platform.log.partition', groupId, topic, partition]);

export interface PartitionHead {
  topic: string;
  partition: number;
  nextOffset: number;
}

export class GroupSession {
  /** topic → partition → next offset to hand out */
  private readonly owned = new Map<string, Map<number, number>>();
  private failure: Error | undefined;

  private constructor(
    private readonly client: pg.Client,
    private readonly groupId: string,
    readonly memberKey: string,
  ) {}

  static async open(
    pool: pg.Pool,
    groupId: string,
    topics: string[],
    onSignal: (topic?: string) => void,
  ): Promise<GroupSession> {
    const client = sessionClient(pool, 'log-member');
    const session = new GroupSession(client, groupId, randomBytes(8).readBigInt64BE().toString());
    client.on('error', (error) => {
      session.failure = error;
      onSignal();
    });
    client.on('notification', (message) => onSignal(message.payload));
    await client.connect();
    try {
      await session.join(topics);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    return session;
  }

  private async join(topics: string[]): Promise<void> {
    await this.client.query(`listen ${NOTIFY_CHANNEL}`);
    // Lock before inserting the row, so a row anyone can see always belongs to a live member.
    await this.client.query('select pg_advisory_lock($1::bigint)', [this.memberKey]);
    await this.client.query(`delete from log.group_members m where m.group_id = $1 and not ${memberIsLive}`, [
      this.groupId,
    ]);
    await this.client.query(
      'insert into log.group_members (group_id, topic, member_key) select $1, unnest($2::text[]), $3',
      [this.groupId, topics, this.memberKey],
    );
  }

  throwIfFailed(): void {
    if (this.failure) throw this.failure;
  }

  async liveMembers(topic: string): Promise<number> {
    const { rows } = await this.client.query<{ members: number }>(
      `select count(*)::int as members from log.group_members m where m.group_id = $1 and m.topic = $2 and ${memberIsLive}`,
      [this.groupId, topic],
    );
    return rows[0]?.members ?? 0;
  }

  ownedPartitions(topic: string): number[] {
    return [...(this.owned.get(topic)?.keys() ?? [])].sort((a, b) => a - b);
  }

  position(topic: string, partition: number): number | undefined {
    return this.owned.get(topic)?.get(partition);
  }

  /** Takes the partition if no other member holds it, starting at the group's committed offset. */
  async tryOwn(topic: string, partition: number, start: 'earliest' | 'latest'): Promise<boolean> {
    const { rows } = await this.client.query<{ locked: boolean }>(
      'select pg_try_advisory_lock(hashtextextended($1, 0)) as locked',
      [partitionLockName(this.groupId, topic, partition)],
    );
    if (!rows[0]?.locked) return false;
    // Read only after locking: a seek or another member's last commit is then fully visible.
    const position = await this.startPosition(topic, partition, start);
    this.partitionsOf(topic).set(partition, position);
    return true;
  }

  private async startPosition(topic: string, partition: number, start: 'earliest' | 'latest'): Promise<number> {
    const { rows } = await this.client.query<{ next_offset: string; committed_offset: string | null }>(
      `select h.next_offset, g.committed_offset
         from log.partition_heads h
         left join log.group_offsets g on g.group_id = $1 and g.topic = h.topic and g.partition = h.partition
        where h.topic = $2 and h.partition = $3`,
      [this.groupId, topic, partition],
    );
    const row = rows[0];
    if (!row) throw new Error(`unknown partition ${topic}/${partition}`);
    if (row.committed_offset !== null) return Number(row.committed_offset);
    return start === 'latest' ? Number(row.next_offset) : 0;
  }

  async release(topic: string, partition: number): Promise<void> {
    this.owned.get(topic)?.delete(partition);
    await this.client.query('select pg_advisory_unlock(hashtextextended($1, 0))', [
      partitionLockName(this.groupId, topic, partition),
    ]);
  }

  async heads(topics: string[]): Promise<PartitionHead[]> {
    const { rows } = await this.client.query<{ topic: string; partition: number; next_offset: string }>(
      'select topic, partition, next_offset from log.partition_heads where topic = any($1::text[]) order by topic, partition',
      [topics],
    );
    return rows.map((r) => ({ topic: r.topic, partition: r.partition, nextOffset: Number(r.next_offset) }));
  }

  async fetch(topic: string, partition: number, fromOffset: number, limit: number): Promise<LogRecord[]> {
    const { rows } = await this.client.query<RecordRow>(
      `select ${recordColumns} from log.records
        where topic = $1 and partition = $2 and "offset" >= $3 order by "offset" limit $4`,
      [topic, partition, fromOffset, limit],
    );
    return rows.map(toLogRecord);
  }

  async commit(topic: string, partition: number, nextOffset: number): Promise<void> {
    await this.client.query(
      `insert into log.group_offsets (group_id, topic, partition, committed_offset) values ($1, $2, $3, $4)
       on conflict (group_id, topic, partition) do update set committed_offset = excluded.committed_offset, updated_at = now()`,
      [this.groupId, topic, partition, nextOffset],
    );
    this.partitionsOf(topic).set(partition, nextOffset);
  }

  /** Moves the read position without committing, past a range retention already deleted. */
  skipTo(topic: string, partition: number, nextOffset: number): void {
    this.partitionsOf(topic).set(partition, nextOffset);
  }

  /** Leaves the group. Closing the connection frees every lock even if the row delete fails. */
  async close(): Promise<void> {
    this.owned.clear();
    if (!this.failure) {
      await this.client
        .query('delete from log.group_members where group_id = $1 and member_key = $2', [this.groupId, this.memberKey])
        .catch(() => undefined);
    }
    await this.client.end().catch(() => undefined);
  }

  private partitionsOf(topic: string): Map<number, number> {
    let partitions = this.owned.get(topic);
    if (!partitions) {
      partitions = new Map();
      this.owned.set(topic, partitions);
    }
    return partitions;
  }
}

// pg_locks shows a bigint advisory key as its high half in classid and low half in objid, objsubid 1.
const memberIsLive = `exists (
  select 1 from pg_locks l
   where l.locktype = 'advisory' and l.granted and l.objsubid = 1
     and l.database = (select oid from pg_database where datname = current_database())
     and l.classid = ((m.member_key >> 32) & 4294967295)::oid
     and l.objid = (m.member_key & 4294967295)::oid)`;
