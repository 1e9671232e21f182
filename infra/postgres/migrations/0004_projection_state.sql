-- The carried state of ClickHouse projections (infra/projections/analytics.ts): a small value per
-- key (a tenant's running hash) that a projection's rows depend on, written in the same transaction
-- as the projection's checkpoint, so a batch replayed after a crash starts from the same state.
CREATE TABLE es.projection_state (
  projection  text NOT NULL,
  generation  integer NOT NULL,
  key         text NOT NULL,
  value       jsonb NOT NULL,
  PRIMARY KEY (projection, generation, key)
);
