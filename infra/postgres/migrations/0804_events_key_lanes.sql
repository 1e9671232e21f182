-- Delivery by entity key (issue 25): a subscription's events of different keys in one partition are
-- handed over concurrently, each key's in order. next_seq stays the first event not yet finished
-- (the commit point: a crash delivers again from there); what is finished beyond it, the keys
-- waiting for a retry, and how far the last turn read are kept beside it.
ALTER TABLE events.cursors
  -- events at or after next_seq already delivered, dead-lettered or skipped
  ADD COLUMN done_seqs bigint[] NOT NULL DEFAULT '{}',
  -- keys held back by a failed attempt: {"<key>": {"seq": n, "attempts": n, "retryAt": epoch ms, "error": "…"}}
  ADD COLUMN holds jsonb NOT NULL DEFAULT '{}',
  -- the first event the last turn neither finished nor held back: records from here on are new work
  ADD COLUMN scan_seq bigint NOT NULL DEFAULT 0;
