-- Events a tenant published on the bus per UTC day (spec 001 events_per_day): counted by the
-- publish command in the transaction that stages them, read by billing's usage and CheckLimit.
CREATE TABLE events.daily_usage (
  tenant_id  text NOT NULL,
  day        date NOT NULL,
  published  bigint NOT NULL,
  PRIMARY KEY (tenant_id, day)
);
