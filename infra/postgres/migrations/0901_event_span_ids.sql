-- The span that appended an event (W3C parent id, 16 hex digits), beside its trace id, when a
-- sampled trace caused it: the relay and the projectors continue that trace from it
-- (infra/observability/tracing.ts, continueTraces). NULL when tracing is off.
ALTER TABLE es.events ADD COLUMN IF NOT EXISTS span_id text;
