-- Deleting a webhook hides it at once and leaves its deliveries to a background purge
-- (docs/webhooks.md, "Deleting a webhook"): a busy webhook keeps hundreds of thousands of them for
-- 30 days, and the ON DELETE CASCADE of its row deleted every one inside the DELETE request's
-- transaction (seconds on the single writer, RELIABILITY.md D2 allows 50 ms). deleted_at marks a
-- webhook whose purge job (`webhook.purge`) is under way: the API, the per-organization limit, the
-- outbox and the dispatcher no longer see it; the job deletes its deliveries in chunks, then the row.
ALTER TABLE webhooks ADD COLUMN deleted_at INTEGER;
