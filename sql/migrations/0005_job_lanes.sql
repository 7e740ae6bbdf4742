-- Lanes of the job queue: the scheduler keeps slots for each, so a small job (an API batch of
-- contacts) never waits behind long ones (CSV imports, feeds, purges) (SPEC §7: a small API
-- import completes well within a second).
ALTER TABLE jobs ADD COLUMN lane TEXT NOT NULL DEFAULT 'bulk' CHECK (lane IN ('bulk', 'express'));
DROP INDEX jobs_runnable;
CREATE INDEX jobs_runnable ON jobs (lane, status, run_after) WHERE status IN ('pending', 'processing');
