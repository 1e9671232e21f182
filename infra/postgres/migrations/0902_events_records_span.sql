-- The span that appended an event (its record's spanId header), beside the Event, so that each
-- delivery of it continues the trace of the request that caused it (commands/events/delivery.ts).
ALTER TABLE events.records ADD COLUMN IF NOT EXISTS span_id text;
