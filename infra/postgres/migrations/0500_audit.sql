-- Audit (commands/audit): what the audit service keeps beside ClickHouse.
CREATE SCHEMA IF NOT EXISTS audit;

-- The head of each tenant's `log` hash chain (records of platform.audit.events), advanced by the
-- audit consumer under the tenant's advisory lock after each insert into ClickHouse.
CREATE TABLE audit.chain_heads (
  tenant_id   text PRIMARY KEY,
  seq         bigint NOT NULL,
  hash        text NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- The anonymization overlay: one rule per user and tenant (a second request is 409). Digests are
-- HMACs of the normalized values to hide, never the values themselves.
CREATE TABLE audit.anonymizations (
  id            uuid PRIMARY KEY,
  tenant_id     text NOT NULL,
  user_id       text NOT NULL,
  status        text NOT NULL CHECK (status IN ('pending', 'completed')),
  digests       text[] NOT NULL,
  lengths       integer[] NOT NULL,
  requested_by  text NOT NULL,
  created_at    timestamptz NOT NULL,
  completed_at  timestamptz,
  UNIQUE (tenant_id, user_id)
);
CREATE INDEX anonymizations_pending ON audit.anonymizations (created_at) WHERE status = 'pending';

-- Exports of ranges that reach into cold storage: restored from the monthly archives by a worker,
-- written to the object store, read through GET /audit/export/jobs/:id.
CREATE TABLE audit.export_jobs (
  id            uuid PRIMARY KEY,
  tenant_id     text NOT NULL,
  requested_by  text NOT NULL,
  format        text NOT NULL CHECK (format IN ('json', 'csv')),
  since         timestamptz NOT NULL,
  until         timestamptz NOT NULL,
  status        text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
  object_key    text,
  records       bigint,
  error         text,
  created_at    timestamptz NOT NULL,
  started_at    timestamptz,
  completed_at  timestamptz
);
CREATE INDEX export_jobs_queued ON audit.export_jobs (created_at) WHERE status IN ('queued', 'running');

-- The cold archives: one compressed object per tenant and month.
CREATE TABLE audit.archives (
  tenant_id    text NOT NULL,
  month        text NOT NULL,
  object_key   text NOT NULL,
  records      bigint NOT NULL,
  sha256       text NOT NULL,
  archived_at  timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, month)
);
