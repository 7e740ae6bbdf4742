-- An inbox file is taken once its size and modification time stopped changing for 2 seconds; a
-- writer that paused longer at a line break (a stalled copy) and then went on writing had the rest
-- of its file moved to done/ unread, without a word (a tester's case). The size the file had when
-- it was taken is kept with its feed job: when the job ends and the file has another size, it goes
-- to failed/ saying so (src/tracking/feed-files.ts settleFeedFile). Only the size: a copy of the
-- data folder (a restore, tar, scp) may change a file's modification time, never its size.
ALTER TABLE feed_jobs ADD COLUMN taken_size INTEGER;
