-- API-call audit records (audit.api.called) that could not be published while the log was down.
-- The gateway writes them here; the gateway worker replays them onto platform.audit.events every
-- 30 s and deletes what it published. Consumers dedupe on event_id, so a replay after a publish
-- that timed out but succeeded costs a duplicate, never a loss.
CREATE SCHEMA IF NOT EXISTS gateway;

CREATE TABLE gateway.api_audit_fallback (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  event_id    uuid NOT NULL UNIQUE,
  record      jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
