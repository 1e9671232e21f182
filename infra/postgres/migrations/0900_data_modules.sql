-- The data-model layer's operational state of each module (spec 002, "Module status"): the schema
-- version its numbered migrations reached in module_<slug>, the dirty flag and the error of a failed
-- migration, and the permissions reconciled from its models. Not events: the migrations' DDL is
-- outside the event store, and what they reached is a fact of the database itself.
CREATE TABLE modules.schema_state (
  module_id        text PRIMARY KEY,
  slug             text NOT NULL,
  version          int NOT NULL DEFAULT 0,
  -- the migration after `version` failed: nothing runs until a fixed version, a retry or force-version
  dirty            boolean NOT NULL DEFAULT false,
  failed_version   int,
  migration_error  text,
  -- false after a migration whose permission reconciliation did not complete: retried at start and health checks
  permissions_reconciled boolean NOT NULL DEFAULT true,
  updated_at       timestamptz NOT NULL
);

-- <module>.<model>.read/write/delete and the manifest's own permissions; archived ones evaluate as
-- denied even when a role still holds them.
CREATE TABLE modules.permissions (
  key         text PRIMARY KEY,
  module_id   text NOT NULL,
  description text NOT NULL,
  status      text NOT NULL CHECK (status IN ('active', 'archived')),
  updated_at  timestamptz NOT NULL
);
CREATE INDEX permissions_by_module ON modules.permissions (module_id);
