-- The event bus's operational tables (spec 002, Event bus). Subscriptions and topic schemas are
-- event-sourced (rm.events_subscriptions, rm.events_topic_schemas); these tables hold the work.
CREATE SCHEMA IF NOT EXISTS events;

-- Staged publishes: POST /events/publish(/batch) inserts here in one transaction (all or nothing);
-- the bus relay publishes committed rows to the log in transaction order and deletes them. Rows of
-- a transaction still running are invisible to the relay (transaction_id below the snapshot's xmin),
-- so a late commit is never skipped.
CREATE TABLE events.outbox (
  position       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  transaction_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
  topic          text NOT NULL,
  key            text NOT NULL,
  value          text NOT NULL,
  headers        jsonb NOT NULL,
  ts             timestamptz NOT NULL
);
CREATE INDEX outbox_order ON events.outbox (transaction_id, position);

-- The fan-out: each topic some subscription reads is consumed by the consumer group
-- events.fanout.<topic> and copied here per tenant, with a dense sequence per (topic, tenant,
-- partition). Subscriptions read their tenant's copy: offsets, lag and seeks never count or reach
-- another tenant's records on the shared topic.
CREATE TABLE events.fanout_topics (
  topic         text PRIMARY KEY,
  -- the time the fan-out of the topic starts from: a seek cannot go back before it
  indexed_since timestamptz NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);

-- the last log offset copied per partition: a batch delivered again by the log is not copied twice
CREATE TABLE events.fanout_progress (
  topic       text NOT NULL,
  partition   int NOT NULL,
  last_offset bigint NOT NULL,
  PRIMARY KEY (topic, partition)
);

-- the next sequence number of a tenant's records on a partition: the tenant's log end offset
CREATE TABLE events.tenant_heads (
  topic     text NOT NULL,
  tenant_id text NOT NULL,
  partition int NOT NULL,
  next_seq  bigint NOT NULL,
  PRIMARY KEY (topic, tenant_id, partition)
);

CREATE TABLE events.records (
  topic      text NOT NULL,
  tenant_id  text NOT NULL,
  partition  int NOT NULL,
  seq        bigint NOT NULL,
  log_offset bigint NOT NULL,
  event_id   uuid NOT NULL,
  type       text NOT NULL,
  key        text NOT NULL,
  ts         timestamptz NOT NULL,
  -- the Event resource as delivered (spec 002, Event), JSON text
  value      text NOT NULL,
  PRIMARY KEY (topic, tenant_id, partition, seq)
);
CREATE INDEX records_by_time ON events.records (topic, tenant_id, partition, ts, seq);
CREATE INDEX records_retention ON events.records (topic, ts);

-- Where each subscription stands on each partition of its tenant's records: next_seq is the
-- subscription's current offset. Records below min_log_offset were on the log before the
-- subscription existed and are passed over. A failing record keeps its partition waiting
-- (per-entity order) until retry_at; after the third failed attempt it goes to the DLQ.
CREATE TABLE events.cursors (
  subscription_id uuid NOT NULL,
  partition       int NOT NULL,
  tenant_id       text NOT NULL,
  topic           text NOT NULL,
  next_seq        bigint NOT NULL,
  min_log_offset  bigint NOT NULL DEFAULT 0,
  attempts        int NOT NULL DEFAULT 0,
  last_error      text,
  retry_at        timestamptz,
  PRIMARY KEY (subscription_id, partition)
);
CREATE INDEX cursors_by_tenant_partition ON events.cursors (topic, tenant_id, partition);

-- event ids a deduplicating subscription has processed (kept for the topic's retention)
CREATE TABLE events.processed (
  subscription_id uuid NOT NULL,
  event_id        uuid NOT NULL,
  ts              timestamptz NOT NULL,
  PRIMARY KEY (subscription_id, event_id)
);
CREATE INDEX processed_by_time ON events.processed (ts);

-- Dead letters: an event a subscription failed to process 3 times (spec 002, DLQ states). Also
-- published to platform.<domain>.dlq. A retry or replay-all makes it `retrying` with a due time
-- spaced at DLQ_REPLAY_RATE_LIMIT per second per tenant; redelivered it is resolved, failing again
-- it is pending with one more failure.
CREATE TABLE events.dlq (
  id              uuid PRIMARY KEY,
  tenant_id       text NOT NULL,
  subscription_id uuid NOT NULL,
  consumer_group  text NOT NULL,
  handler_name    text NOT NULL,
  source          text NOT NULL,
  topic           text NOT NULL,
  partition       int NOT NULL,
  seq             bigint NOT NULL,
  event_id        uuid NOT NULL,
  type            text NOT NULL,
  payload         jsonb NOT NULL,
  event           text NOT NULL,
  failure_count   int NOT NULL,
  last_error      text NOT NULL,
  status          text NOT NULL CHECK (status IN ('pending', 'retrying', 'resolved')),
  due_at          timestamptz,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  resolved_at     timestamptz,
  resolved_by     text
);
CREATE INDEX dlq_by_tenant ON events.dlq (tenant_id, created_at DESC, id DESC);
CREATE INDEX dlq_due ON events.dlq (due_at) WHERE status = 'retrying';

-- consumer lag alerts: the level a subscription is at and the one its tenant's admins were told of
CREATE TABLE events.lag_alerts (
  subscription_id uuid PRIMARY KEY,
  tenant_id       text NOT NULL,
  level           text NOT NULL,
  since           timestamptz NOT NULL,
  notified_level  text,
  updated_at      timestamptz NOT NULL
);

-- a bulk-import spike of a tenant on a topic: lag warnings are held back until `until`
CREATE TABLE events.bulk_imports (
  tenant_id text NOT NULL,
  topic     text NOT NULL,
  until     timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, topic)
);
