-- The audit store: records of platform.audit.events (audit.record.created, audit.api.called),
-- appended by the audit consumer (commands/audit/ingest.ts) into one hash chain per tenant.
-- Ordered for the reads (a tenant's newest first, keyset on timestamp and id). Partitioned by the
-- month of ingestion so that one batch is one part (an insert is all or nothing: the chain never
-- has a hole). Rows leave after the hot retention by ingestion time, which follows the chain's
-- order; AUDIT_HOT_DAYS replaces the 90 days at start (commands/audit/retention.ts).
CREATE TABLE IF NOT EXISTS {db}.audit_records (
  tenant_id String,
  id String,
  seq UInt64,
  action LowCardinality(String),
  entity_type LowCardinality(String),
  entity_id String,
  actor_id String,
  actor_ip Nullable(String),
  actor_user_agent Nullable(String),
  before Nullable(String),
  after Nullable(String),
  meta Nullable(String),
  trace_id Nullable(String),
  timestamp DateTime64(3, 'UTC'),
  prev_hash String,
  hash String,
  source LowCardinality(String),
  ingested_at DateTime64(3, 'UTC'),
  INDEX seq_idx seq TYPE minmax GRANULARITY 1,
  INDEX id_idx id TYPE bloom_filter GRANULARITY 4,
  INDEX actor_idx actor_id TYPE bloom_filter GRANULARITY 4,
  INDEX entity_idx entity_id TYPE bloom_filter GRANULARITY 4
) ENGINE = MergeTree
PARTITION BY toYYYYMM(ingested_at)
ORDER BY (tenant_id, timestamp, id)
TTL toDateTime(ingested_at) + INTERVAL 90 DAY;
