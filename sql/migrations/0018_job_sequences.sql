-- Jobs of one sequence run one at a time, in the order they were created: a job of a sequence is
-- claimable only while it is the oldest unfinished job of that sequence. Feed jobs are one
-- sequence: two feeds applied at once interleaved their chunks, so a feed sent after another
-- could be overwritten by it (a provider's same-day correction lost; a record without observedAt
-- is stamped when it is applied). Jobs of other kinds have no sequence and run as before.
ALTER TABLE jobs ADD COLUMN sequence TEXT;
UPDATE jobs SET sequence = kind WHERE kind = 'feed' AND status IN ('pending', 'processing');
CREATE INDEX jobs_in_sequence ON jobs (sequence, created_at) WHERE sequence IS NOT NULL AND status IN ('pending', 'processing');
