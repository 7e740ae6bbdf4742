-- Finished jobs of the kinds no API shows (purges) are deleted some time after they ended
-- (src/jobs/scheduler.ts, the nightly `jobs-prune`; docs/decisions.md, "Finished jobs"). Import
-- and feed jobs stay: their records are shown by the API. Without this index every chunk of that
-- prune scanned the whole jobs table, which holds every import and feed job ever run (104 ms for a
-- chunk that found nothing among 1,000,000 jobs); with it a chunk reads only its kind's finished
-- jobs in the order they ended. One entry is written when a job ends.
CREATE INDEX jobs_finished ON jobs (kind, updated_at) WHERE status IN ('completed', 'failed');
