-- When the facts a contact shows (company, title, location…) were observed, at least: the
-- observation time of the person it last took them from, in milliseconds, set whenever tracking
-- writes the contact (a match, a change). NULL: none taken since this column exists.
-- A contact matched to another person (moved by its address, matched again after a namesake or a
-- shared address left it unmatched) never takes facts observed before this time: that would roll
-- it back (SPEC §5; testers' cases: a contact unmatched by a namesake was then matched by its
-- address to a person known from an old record, a job change back to a company it had left).
ALTER TABLE contacts ADD COLUMN facts_observed_at INTEGER;
