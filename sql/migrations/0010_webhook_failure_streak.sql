-- "A webhook whose deliveries keep failing for days is disabled" (SPEC §6): failing_since is the
-- start of the current streak of failed attempts, and a streak ends when no attempt failed for a
-- day (the longest retry delay is 12 hours). Without this, one failure after a quiet spell counted
-- from the first failure days ago and disabled the webhook at once.
ALTER TABLE webhooks ADD COLUMN last_failed_at INTEGER;
