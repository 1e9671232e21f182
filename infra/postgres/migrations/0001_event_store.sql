-- Event store: the only place business state is written (DESIGN.md).
CREATE SCHEMA IF NOT EXISTS es;

-- One row per event. position comes from an identity sequence, but transactions commit out of
-- order, so readers of the global log order by (transaction_id, position) and only look below the
-- oldest running transaction (mechanism 1).
CREATE TABLE es.events (
  position        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  transaction_id  xid8 NOT NULL DEFAULT pg_current_xact_id(),
  stream_id       text NOT NULL,
  stream_version  integer NOT NULL,
  event_id        uuid NOT NULL,
  type            text NOT NULL,
  schema_version  integer NOT NULL,
  tenant_id       text NOT NULL,
  actor_id        text,
  trace_id        text,
  causation_id    text,
  correlation_id  text,
  occurred_at     timestamptz NOT NULL,
  data            jsonb NOT NULL,
  CONSTRAINT events_stream_version_unique UNIQUE (stream_id, stream_version),
  CONSTRAINT events_event_id_unique UNIQUE (event_id)
);
CREATE INDEX events_commit_order ON es.events (transaction_id, position);
CREATE INDEX events_tenant_commit_order ON es.events (tenant_id, transaction_id, position);
CREATE INDEX events_occurred_at ON es.events USING brin (occurred_at);

-- One row per stream: its version (the optimistic-concurrency guard) and the state after that
-- version, written in the same transaction as the events, so loading an aggregate costs one row
-- whatever the length of its history (mechanism 2). state_schema names the shape of the stored
-- state; when a decider changes it, the state is rebuilt from the events once.
CREATE TABLE es.streams (
  stream_id     text PRIMARY KEY,
  tenant_id     text NOT NULL,
  version       integer NOT NULL,
  state         jsonb,
  state_schema  text,
  updated_at    timestamptz NOT NULL DEFAULT now()
);

-- Idempotency records (mechanism 3), written in the same transaction as the events they answer for.
CREATE TABLE es.idempotency (
  tenant_id        text NOT NULL,
  idempotency_key  text NOT NULL,
  request_hash     text NOT NULL,
  response_status  integer NOT NULL,
  response_type    text NOT NULL,
  response_body    bytea NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  expires_at       timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, idempotency_key)
);
CREATE INDEX idempotency_expiry ON es.idempotency (expires_at);

-- Where each reader of the global log stands: the outbox relay, async projections, replays.
CREATE TABLE es.checkpoints (
  name            text PRIMARY KEY,
  transaction_id  xid8 NOT NULL DEFAULT '0',
  position        bigint NOT NULL DEFAULT 0,
  updated_at      timestamptz NOT NULL DEFAULT now()
);
