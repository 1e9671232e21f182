-- The PostgreSQL-backed log (infra/log/pg-log.ts): the embedded stand-in for Kafka behind the
-- same LogPort. Same placement (murmur2), same offsets semantics, same consumer-group contract.

create schema log;

create table log.topics (
  name         text primary key,
  partitions   int not null check (partitions > 0),
  retention_ms bigint not null check (retention_ms > 0),
  created_at   timestamptz not null default now()
);

-- next_offset is the offset the next appended record gets. Publishers allocate offsets with
-- UPDATE ... RETURNING, so concurrent publishers to one partition serialize on this row: offsets
-- are dense and a partition's records become visible in offset order (a reader can never see
-- offset n+1 committed while n is still in flight).
create table log.partition_heads (
  topic       text not null references log.topics (name),
  partition   int not null check (partition >= 0),
  next_offset bigint not null default 0 check (next_offset >= 0),
  primary key (topic, partition)
);

-- No foreign key to partition_heads: the only writer allocates the offset from that row in the
-- same transaction, and a per-row check would tax every append.
create table log.records (
  topic     text not null,
  partition int not null,
  "offset"  bigint not null,
  key       text not null,
  -- text, not jsonb: the value comes back byte for byte, as Kafka returns it (jsonb would
  -- reorder keys and drop whitespace, breaking hashes and idempotent comparisons downstream).
  value     text not null,
  headers   jsonb not null default '{}',
  ts        timestamptz not null,
  primary key (topic, partition, "offset")
);

-- offsetsForTime: the first offset at or after a time, without scanning the partition from 0.
create index records_by_time on log.records (topic, partition, ts, "offset");

-- The next offset each consumer group will read; absent until the group commits.
create table log.group_offsets (
  group_id         text not null,
  topic            text not null,
  partition        int not null,
  committed_offset bigint not null check (committed_offset >= 0),
  updated_at       timestamptz not null default now(),
  primary key (group_id, topic, partition)
);

-- Members of a consumer group, to share partitions fairly. A row is live only while its member
-- holds the session advisory lock on member_key (visible in pg_locks), so a crashed process
-- stops counting the moment its connection drops; dead rows are pruned by the next joiner.
create table log.group_members (
  group_id   text not null,
  topic      text not null,
  member_key bigint not null,
  joined_at  timestamptz not null default now(),
  primary key (group_id, topic, member_key)
);
