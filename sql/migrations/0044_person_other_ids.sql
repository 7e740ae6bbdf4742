-- The further personIds a person is known by. A record with a personId nobody has and the LinkedIn
-- URL of a person known under another personId is about that person (LinkedIn is authoritative,
-- docs/tracking.md); their first personId stays on the people row, and the record's is kept here,
-- so that a later record under it alone finds the same person. Until now it was kept nowhere: such
-- a record made a namesake of the person, a contact matched by name + company was left unmatched,
-- and the next record with both keys was rejected as naming two different people (a tester's case).
-- Forgotten with their person (ON DELETE CASCADE: a merge or an erasure request deletes the row).
CREATE TABLE person_other_ids (
  external_id TEXT NOT NULL PRIMARY KEY,
  person      INTEGER NOT NULL REFERENCES people (seq) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;
CREATE INDEX person_other_ids_by_person ON person_other_ids (person);
