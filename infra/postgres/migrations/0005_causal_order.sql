-- Causal order of the global log (DESIGN.md mechanism 1; docs/kernel.md "Global order").
--
-- Readers order events by (transaction_id, position). A transaction's id is taken at its first
-- write, so a transaction that wrote early and appended later would sort before commits it read.
-- The event store keeps the order causal: an append whose transaction id is not above the order
-- keys of the streams its command loaded (and of the stream it appends to) takes a fresh id from a
-- subtransaction instead, and stamps its events with that one. A stream's order key is the id of
-- the (sub)transaction that last wrote its row in es.streams, read from the row's xmin.
--
-- xid8_near widens a 32-bit xid (a row's xmin) to the xid8 closest to ref: exact for any xid within
-- 2^31 of ref, which PostgreSQL's wraparound protection guarantees for every unfrozen row.
CREATE FUNCTION es.xid8_near(x xid, ref xid8) RETURNS xid8
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (ref::text::bigint
        + ((x::text::bigint - ref::text::bigint % 4294967296 + 6442450944) % 4294967296)
        - 2147483648)::text::xid8;
