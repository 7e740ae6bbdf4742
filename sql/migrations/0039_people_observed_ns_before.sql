-- A person's observation time to the nanosecond: `observed_at` holds it rounded up to a whole
-- millisecond, `observed_ns_before` how far before that it is (clock.ts ExactTime). Two
-- observations within one millisecond (microsecond timestamps, as Python and PostgreSQL write
-- them) came out the same time, and the older one, arriving in a later feed, rolled the person
-- back (a tester's case; SPEC §5). Existing rows: 0, the time as stored.
ALTER TABLE people ADD COLUMN observed_ns_before INTEGER NOT NULL DEFAULT 0;
