-- A job claimed by a process that died before it began work on the job's content (while starting,
-- claiming, opening the uploaded file) did not stop that process: its death is no attempt. Until
-- now every claim counted, and five restarts each killed between a claim and the first stored
-- chunk failed an accepted import for good (a tester's crash loop: SPEC §4.4 says a crash at any
-- point loses no row). `claimed_idle` is 1 from a claim until the run begins work
-- (Lease.working()); the next claim of a job whose holder died with it still 1 takes the dead
-- run's attempt back. A job that kills the process while it works (out of memory on its content)
-- still fails after its attempts. Existing rows: 0, counted as before.
ALTER TABLE jobs ADD COLUMN claimed_idle INTEGER NOT NULL DEFAULT 0;
