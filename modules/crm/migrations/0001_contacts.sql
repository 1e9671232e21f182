-- Contacts of a tenant. Every table of a module carries tenant_id (the registry refuses one without);
-- row-level security by tenant is added by the registry after each migration.
CREATE TABLE contacts (
  tenant_id text NOT NULL,
  id        uuid PRIMARY KEY,
  name      text NOT NULL,
  email     text
);
CREATE INDEX contacts_by_tenant_name ON contacts (tenant_id, name, id);
