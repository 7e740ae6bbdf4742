-- An inbox file is taken once its size and modification time stopped changing for 2 seconds; a
-- writer that paused longer at a line break (a stalled copy) and then went on writing had the rest
-- of its file moved to done/ unread, without a word (a tester's case). The size and modification
-- time the file had when it was taken are kept with its feed job: when the job ends and the file
-- differs, it goes to failed/ saying so (src/tracking/feed-files.ts settleFeedFile).
ALTER TABLE feed_jobs ADD COLUMN taken_size INTEGER;
ALTER TABLE feed_jobs ADD COLUMN taken_mtime_ms REAL;
