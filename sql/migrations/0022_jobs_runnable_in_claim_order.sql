-- The claim walks jobs_runnable in claim order (run_after, then created_at) and stops at the first
-- job it may take (src/jobs/queue-repo.ts NEXT_CLAIMABLE). Without created_at in the index, the
-- jobs of one run_after were sorted; without the walk, every waiting job was read and sorted at
-- each claim — ~40 ms with 160,000 jobs waiting, after every POST (a one-hour soak).
DROP INDEX jobs_runnable;
CREATE INDEX jobs_runnable ON jobs (lane, status, run_after, created_at) WHERE status IN ('pending', 'processing');
