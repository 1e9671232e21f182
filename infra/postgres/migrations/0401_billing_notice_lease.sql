-- A claimed notice is leased on the database's own clock, not the business clock the due times
-- use: the lease only keeps two workers from sending the same notice at once, which is a matter of
-- real seconds. (On the business clock a clock that jumps — a test moving it by days, a corrected
-- host clock — let a second worker claim a notice the first was still sending: sent twice.)
ALTER TABLE billing.notices ADD COLUMN leased_until timestamptz;
