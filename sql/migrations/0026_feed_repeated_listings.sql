-- A feed that lists one person more than once at the same observation time (one row per job, or a
-- record repeated) applies the first listing and counts the others as `repeated` (SPEC §5:
-- "Replaying the same feed produces no new changes"): applying every listing made the last one win,
-- and a replay of the file then applied the first one again — the contact's company flipped and
-- flipped back, two job changes a replay. The people a feed job has listed so far are kept per
-- chunk, in the chunk's transaction, so that a feed resumed after a crash still knows them; they
-- are deleted when the job ends.
ALTER TABLE feed_jobs ADD COLUMN repeated INTEGER NOT NULL DEFAULT 0;
CREATE TABLE feed_listed_people (
  feed_id TEXT NOT NULL REFERENCES feed_jobs (id) ON DELETE CASCADE,
  chunk   INTEGER NOT NULL,          -- the feed's cursor (records) before the chunk
  people  BLOB NOT NULL,             -- the seqs of the people first listed in the chunk (float64, little-endian)
  PRIMARY KEY (feed_id, chunk)
) STRICT, WITHOUT ROWID;
