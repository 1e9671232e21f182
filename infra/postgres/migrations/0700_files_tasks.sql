-- Files (commands/files, workers/files): the work that follows an upload, kept beside the events.
CREATE SCHEMA IF NOT EXISTS files;

-- Work for the files workers: a scan of each staged file, an image processing job. Written in the
-- transaction of the command that asks for it; claimed by a short UPDATE that sets leased_until
-- (no transaction is held while the work runs), so a crashed worker's task is taken again once
-- its lease ends. A task is deleted when its work is done; due_at moves on when it must wait
-- (scanner down, a presigned upload whose bytes have not arrived yet).
CREATE TABLE files.tasks (
  kind          text NOT NULL CHECK (kind IN ('scan', 'process')),
  tenant_id     text NOT NULL,
  file_id       text NOT NULL,
  job_id        text NOT NULL DEFAULT '',
  created_at    timestamptz NOT NULL,
  due_at        timestamptz NOT NULL,
  leased_until  timestamptz NOT NULL DEFAULT '-infinity',
  attempts      integer NOT NULL DEFAULT 0,
  last_error    text,
  PRIMARY KEY (kind, tenant_id, file_id, job_id)
);
CREATE INDEX tasks_due ON files.tasks (kind, due_at);

-- Objects to remove from the store: written with the event that makes them useless (a permanent
-- delete, a processing that replaced the content), removed right after the commit, and retried by
-- the maintenance worker when the store was down.
CREATE TABLE files.doomed_objects (
  key         text PRIMARY KEY,
  tenant_id   text NOT NULL,
  created_at  timestamptz NOT NULL,
  attempts    integer NOT NULL DEFAULT 0
);

-- When each periodic sweep last ran, so that several workers processes run it once per interval.
CREATE TABLE files.sweeps (
  name      text PRIMARY KEY,
  last_run  timestamptz NOT NULL
);
