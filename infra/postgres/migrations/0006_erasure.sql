-- The services that erase a terminated tenant's data on this platform, and in which phase
-- (infra/erasure.ts): each one's worker registers itself when it starts, and billing advances a
-- termination phase only when every service registered for it has confirmed on the log.
CREATE TABLE es.erasure_participants (
  domain         text PRIMARY KEY,
  phase          text NOT NULL CHECK (phase IN ('deleting_records', 'deleting_files')),
  registered_at  timestamptz NOT NULL
);
