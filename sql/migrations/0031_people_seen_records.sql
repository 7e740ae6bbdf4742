-- SPEC §5: "Replaying the same feed produces no new changes". A record observed at the same time
-- as what is known is applied when it comes in a later feed — a provider's correction of the same
-- day (date-only observedAt) must not be lost — so replaying a day's feed after its correction
-- applied the original again, and then the correction: the contact flipped and flipped back, two
-- job changes a replay (a tester's case). A person now keeps the digests of the records seen at its
-- observation time (8 bytes each, the latest 64; NULL: none yet); one coming again is a replay and
-- changes nothing. People stored before keep NULL until their next record.
ALTER TABLE people ADD COLUMN seen_records BLOB;
