-- The notification service's operational tables (not event-sourced): the delivery queue, the rate
-- windows, the real-time socket's replay buffer, browser push subscriptions and registered
-- channels' sealed secrets. What happened to a notification is in its event stream and in
-- rm.notify_notifications; these tables hold the work and what may not go into an event.
CREATE SCHEMA IF NOT EXISTS notify;

-- One row per notification that is not delivered yet (queued or sending) or that failed (kept for
-- POST /notify/:id/retry until the failed-history retention purges it). Delivered rows are deleted,
-- and with them the message content (mail bodies, one-time tokens in headers).
-- Workers claim rows with SELECT … FOR UPDATE SKIP LOCKED, mark them sending and commit before they
-- call the channel; claimed_by is the worker's session advisory lock key, so the row of a worker
-- whose process died is found (its lock is gone) and queued again at once.
CREATE TABLE notify.deliveries (
  id                 uuid PRIMARY KEY,
  -- acceptance order: first in, first out among messages of one priority due at the same time
  seq                bigint GENERATED ALWAYS AS IDENTITY,
  tenant_id          text NOT NULL,
  module             text,
  rate_limited       boolean NOT NULL,
  channel_type       text NOT NULL,
  channel_id         text,
  priority           smallint NOT NULL,
  state              text NOT NULL CHECK (state IN ('queued', 'sending', 'failed')),
  due_at             timestamptz NOT NULL,
  attempt            int NOT NULL DEFAULT 0,
  claimed_by         bigint,
  lease_until        timestamptz,
  possible_duplicate boolean NOT NULL DEFAULT false,
  message            jsonb NOT NULL,
  last_error         text,
  created_at         timestamptz NOT NULL
);
CREATE INDEX deliveries_due ON notify.deliveries (priority DESC, due_at, seq) WHERE state = 'queued';
CREATE INDEX deliveries_pending_per_tenant ON notify.deliveries (tenant_id) WHERE state <> 'failed';
CREATE INDEX deliveries_sending ON notify.deliveries (lease_until) WHERE state = 'sending';
CREATE INDEX deliveries_failed ON notify.deliveries (created_at) WHERE state = 'failed';

-- Rate limits: a one-minute window per scope ('t:<tenant>', 'm:<tenant>:<module>'), opened by the
-- first message it admits; claims lock the rows they count against.
CREATE TABLE notify.rate_windows (
  scope        text PRIMARY KEY,
  window_start timestamptz NOT NULL,
  used         int NOT NULL
);

-- What the websocket channel delivered, kept an hour for replay after a reconnect (spec 002: up to
-- 100 messages from a buffer kept 1 hour). seq is the delivery order (a replay takes what was
-- delivered after the client's last message), queued_seq the acceptance order (a replay is sent in it).
CREATE TABLE notify.socket_buffer (
  seq             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  queued_seq      bigint NOT NULL,
  tenant_id       text NOT NULL,
  user_id         text NOT NULL,
  notification_id uuid NOT NULL,
  payload         jsonb NOT NULL,
  created_at      timestamptz NOT NULL,
  UNIQUE (tenant_id, notification_id)
);
CREATE INDEX socket_buffer_user ON notify.socket_buffer (tenant_id, user_id, seq);
CREATE INDEX socket_buffer_age ON notify.socket_buffer (created_at);

-- Browser push subscriptions (W3C Push API): where a user's browsers receive Web Push messages.
CREATE TABLE notify.push_subscriptions (
  tenant_id  text NOT NULL,
  endpoint   text NOT NULL,
  user_id    text NOT NULL,
  p256dh     text NOT NULL,
  auth       text NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, endpoint)
);
CREATE INDEX push_subscriptions_user ON notify.push_subscriptions (tenant_id, user_id);

-- Secrets of registered channels (SMTP credentials, VAPID private keys), sealed with AES-256-GCM
-- under a key derived from PLATFORM_SECRET_KEY; the channel's event carries the config redacted.
CREATE TABLE notify.channel_secrets (
  tenant_id  text NOT NULL,
  channel_id text NOT NULL,
  sealed     text NOT NULL,
  PRIMARY KEY (tenant_id, channel_id)
);
