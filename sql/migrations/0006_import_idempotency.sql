-- Idempotency-Key on the requests that create import jobs (RELIABILITY.md D4 e;
-- draft-ietf-httpapi-idempotency-key-header): a client that retries a POST of contacts or a CSV
-- upload with the same key gets the job of its first request instead of a second import.
ALTER TABLE import_jobs ADD COLUMN idempotency_key TEXT;
ALTER TABLE import_jobs ADD COLUMN request_hash TEXT;          -- sha256 of what was submitted
CREATE UNIQUE INDEX import_jobs_by_idempotency_key ON import_jobs (ledger_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
