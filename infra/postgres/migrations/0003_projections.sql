-- Read models live in schema rm. Each projection writes into generation tables (rm.<table>_g<N>);
-- readers use the view rm.<table>, which points at the active generation. A rebuild fills the next
-- generation while the view keeps serving the old one, then repoints the view in one transaction.
CREATE SCHEMA IF NOT EXISTS rm;

CREATE TABLE es.projections (
  name               text PRIMARY KEY,
  version            integer NOT NULL,
  mode               text NOT NULL CHECK (mode IN ('inline', 'async')),
  active_generation  integer NOT NULL,
  building           integer,
  updated_at         timestamptz NOT NULL DEFAULT now()
);
