-- Records a feed applied, by what they say and when they say it was observed, so that a later feed
-- bringing one again (a replay: the same file sent twice, a day's feed after its correction, in
-- any format) counts it as it was counted then and applies nothing (SPEC §5: "replaying the same
-- feed produces no new changes"). Until now a replay was told by the person it matched (their
-- seen_records), and matching depends on whom the feed had stored before the record: a record
-- matched by e-mail or name + company could find another person at its replay, one the same feed
-- made after it — a person more, and at times a contact's company flipped (a job change a replay;
-- found by a property test of random feeds). A record is found here before any matching.
-- `key`: 12 bytes of a SHA-256 of what the record says (tracker.ts recordSays) and its exact
-- observation time; `observed_day`: that time's UTC day (the key's first part: a day's feed fills
-- a range of its own); `applied_day`: the UTC day the record was applied — rows are kept
-- FEED_REPLAY_DAYS after it, whenever the record says it was observed (a backfill of last year is
-- remembered as long as today's feed); `feed`: 48 bits of the feed job's id (a feed's own later
-- listings of a record are its own: `repeated`); `person`: the person it was applied to (the
-- replay lists them, as the first time did); `outcome`: 0 applied or told what was known, 1
-- stale, 2 repeated.
CREATE TABLE feed_records_applied (
  observed_day INTEGER NOT NULL,
  key          BLOB NOT NULL,
  applied_day  INTEGER NOT NULL,
  feed         INTEGER NOT NULL,
  person       INTEGER,
  outcome      INTEGER NOT NULL CHECK (outcome IN (0, 1, 2)),
  PRIMARY KEY (observed_day, key)
) STRICT, WITHOUT ROWID;
