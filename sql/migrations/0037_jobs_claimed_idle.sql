-- A job claimed by a process that died before it began work on the job's content (while starting,
-- claiming, opening the uploaded file) did not stop that process: its death is no attempt. Until
-- now every claim counted, and five restarts each killed between a claim and the first stored
-- chunk failed an accepted import for good (a tester's crash loop: SPEC §4.4 says a crash at any
-- point loses no row). `claimed_idle` is 1 from a claim until the run begins work
-- (Lease.working(); at the claim itself for runners that do not mark it); the next claim of a job
-- whose holder died with it still 1 takes the dead run's attempt back. `idle_givebacks` counts
-- those since the job's last progress: past 20 (queue-repo.ts MAX_IDLE_GIVEBACKS) such deaths count
-- again, so that whatever kills the process before a run marks its work (a CSV worker reading a
-- first batch under a memory limit) cannot crash-loop the service for ever. Existing rows: 0,
-- counted as before.
ALTER TABLE jobs ADD COLUMN claimed_idle INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN idle_givebacks INTEGER NOT NULL DEFAULT 0;
