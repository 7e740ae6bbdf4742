-- A person's observation time to the nanosecond: `observed_at` holds it rounded up to a whole
-- millisecond, `observed_ns_before` how far before that it is (clock.ts ExactTime). Two
-- observations within one millisecond (microsecond timestamps, as Python and PostgreSQL write
-- them) came out the same time, and the older one, arriving in a later feed, rolled the person
-- back (a tester's case; SPEC §5). Existing rows: NULL, not known — within its millisecond such a
-- time is the same time as any other, as before (0 would have made it the millisecond's latest
-- instant, and every later record of that millisecond, corrections included, stale).
ALTER TABLE people ADD COLUMN observed_ns_before INTEGER;
