-- Where `GET …/changes?since=` starts (docs/tracking.md, "Where a since feed starts"). The feed
-- walks (ledger_id, seq) from the first change detected at or after `since`; that start was
-- `min(seq) … WHERE ledger_id = ? AND detected_at >= ?`, which reads every index entry of the
-- ledger after `since` (188 ms for a since on the first day of a ledger of 2.9 million changes).
-- The first entry of (ledger_id, detected_at) at `since` is not always that change: detected_at
-- follows the wall clock, which can step back (NTP, a restore onto another machine), and then a
-- later seq has an earlier detected_at.
--
-- detected_max is the greatest detected_at of the ledger's changes up to this one: at insert,
-- max(its detected_at, the greatest detected_max of the ledger's changes present then). It never
-- decreases in seq order within a ledger (rows only go away, and a new row has the highest seq),
-- and it is at least detected_at. So the changes with detected_max >= since are a tail of the
-- ledger in seq order that holds every change detected at or after since, and the first of them
-- is one seek in (ledger_id, detected_max). Without a backward clock step it is exactly the first
-- change detected at or after since; after one it may be earlier, never later (the feed still
-- filters on detected_at, so what a client gets is the same).
--
-- Existing rows get the running maximum in seq order.
ALTER TABLE changes ADD COLUMN detected_max INTEGER NOT NULL DEFAULT 0;
UPDATE changes SET detected_max = r.m
  FROM (SELECT seq, max(detected_at) OVER (PARTITION BY ledger_id ORDER BY seq ROWS UNBOUNDED PRECEDING) AS m FROM changes) AS r
  WHERE changes.seq = r.seq;
CREATE INDEX changes_by_ledger_detected_max ON changes (ledger_id, detected_max);
