-- The table that held API-call audit records while the log was down becomes the audit outbox
-- (infra/audit.ts): records a business operation commits are written here in its own transaction,
-- and records acknowledged over HTTP land here when the log cannot take them before the answer.
-- The audit relay (workers/gateway) publishes its rows onto platform.audit.events and deletes them.
ALTER TABLE gateway.api_audit_fallback SET SCHEMA audit;
ALTER TABLE audit.api_audit_fallback RENAME TO outbox;
