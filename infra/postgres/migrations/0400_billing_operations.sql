-- Billing (commands/billing): what billing keeps beside its event-sourced plans and subscriptions.
CREATE SCHEMA IF NOT EXISTS billing;

-- Provider webhooks, stored durably on receipt (verified, before the answer) and processed by the
-- billing worker: one row per provider event id, so a redelivery finds its row and has no effect.
CREATE TABLE billing.webhook_events (
  provider      text NOT NULL,
  event_id      text NOT NULL,
  event_type    text NOT NULL,
  payload       bytea NOT NULL,
  status        text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'processed', 'ignored', 'failed')),
  attempts      integer NOT NULL DEFAULT 0,
  outcome       text,
  tenant_id     text,
  received_at   timestamptz NOT NULL,
  processed_at  timestamptz,
  PRIMARY KEY (provider, event_id)
);
CREATE INDEX webhook_events_pending ON billing.webhook_events (received_at) WHERE status = 'pending';

-- The escalation's notices: recorded once per key by the escalation worker, delivered through the
-- notice port (commands/billing/notices.ts) by the same worker, retried while delivery fails.
-- Termination waits until five notices of the unpaid episode are delivered.
CREATE TABLE billing.notices (
  id               uuid PRIMARY KEY,
  tenant_id        text NOT NULL,
  subscription_id  text NOT NULL,
  notice_key       text NOT NULL,
  kind             text NOT NULL,
  episode          text,
  subject          text NOT NULL,
  body             text NOT NULL,
  status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'no_recipient')),
  attempts         integer NOT NULL DEFAULT 0,
  last_error       text,
  recipient        text,
  created_at       timestamptz NOT NULL,
  next_attempt_at  timestamptz NOT NULL,
  sent_at          timestamptz,
  UNIQUE (tenant_id, subscription_id, notice_key)
);
CREATE INDEX notices_pending ON billing.notices (next_attempt_at) WHERE status = 'pending';
CREATE INDEX notices_episode ON billing.notices (tenant_id, subscription_id, episode);

-- Daily usage snapshots (GET /billing/usage/history), taken by the billing worker once per day.
CREATE TABLE billing.usage_snapshots (
  tenant_id  text NOT NULL,
  day        date NOT NULL,
  usage      jsonb NOT NULL,
  taken_at   timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, day)
);
