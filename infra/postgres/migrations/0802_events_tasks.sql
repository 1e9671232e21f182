-- The task queue (spec 002: "a separate task queue carries transactional tasks"): a task is
-- inserted by UnitOfWork.enqueueTask in the transaction of the business change, so it exists if and
-- only if the change committed; workers run it at least once, with retries and backoff.
CREATE TABLE events.tasks (
  id           uuid PRIMARY KEY,
  tenant_id    text NOT NULL,
  type         text NOT NULL,
  payload      jsonb NOT NULL,
  status       text NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed')),
  attempts     int NOT NULL DEFAULT 0,
  max_attempts int NOT NULL,
  run_at       timestamptz NOT NULL,
  lease_until  timestamptz,
  last_error   text,
  trace_id     text,
  created_at   timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL,
  completed_at timestamptz
);
CREATE INDEX tasks_due ON events.tasks (run_at) WHERE status = 'queued';
CREATE INDEX tasks_running ON events.tasks (lease_until) WHERE status = 'running';
CREATE INDEX tasks_by_tenant ON events.tasks (tenant_id, created_at DESC, id DESC);
