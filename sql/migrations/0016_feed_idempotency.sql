-- Idempotency-Key on POST /feed (draft-ietf-httpapi-idempotency-key-header), as on the requests
-- that create import jobs (0006): a client that retries an upload of records with the same key
-- gets the feed job of its first request instead of a second one. Keys are the caller's own: a
-- feed belongs to the installation, so the key is scoped to who sent it (created_by).
ALTER TABLE feed_jobs ADD COLUMN idempotency_key TEXT;
ALTER TABLE feed_jobs ADD COLUMN request_hash TEXT;          -- sha256 of the body as received, and its format
CREATE UNIQUE INDEX feed_jobs_by_idempotency_key ON feed_jobs (created_by, idempotency_key) WHERE idempotency_key IS NOT NULL;
