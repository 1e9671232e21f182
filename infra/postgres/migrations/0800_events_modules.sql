-- The module registry's operational tables (the registry itself is event-sourced: module.registry.*
-- events, read model rm.modules). Keys and installations are not events: a key's hash must never
-- travel on the log, and installations are written by the data-model layer's install.
CREATE SCHEMA IF NOT EXISTS modules;

-- A module calls the API with `pmk_<key id>.<secret>`; only an HMAC-SHA256 of the secret (key
-- derived from PLATFORM_SECRET_KEY) is kept, so neither a copy of this table nor the secret key alone
-- lets anyone call as the module.
CREATE TABLE modules.keys (
  id          uuid PRIMARY KEY,
  module_id   text NOT NULL,
  secret_hash bytea NOT NULL,
  created_at  timestamptz NOT NULL,
  created_by  text NOT NULL,
  revoked_at  timestamptz,
  last_used_at timestamptz
);
CREATE INDEX keys_by_module ON modules.keys (module_id, created_at DESC);

-- The tenants a module is installed for: a module key acts for one of them (X-Module-Tenant), never
-- for another tenant. The data-model layer's install, activate and deactivate write these rows.
CREATE TABLE modules.installations (
  module_id    text NOT NULL,
  tenant_id    text NOT NULL,
  status       text NOT NULL CHECK (status IN ('active', 'inactive')),
  installed_at timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL,
  PRIMARY KEY (module_id, tenant_id)
);
CREATE INDEX installations_by_tenant ON modules.installations (tenant_id);
