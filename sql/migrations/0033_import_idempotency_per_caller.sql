-- An import's Idempotency-Key was scoped to the ledger: two integrations (a user's script and a
-- service account) that picked the same key collided — the second got the first one's job, or a
-- 422 for a request of its own (a tester's case). The draft (draft-ietf-httpapi-idempotency-key-
-- header) makes a key the client's: it is now scoped to the ledger and the caller who sent it, as
-- POST /feed's already was (0016). Keys unique per ledger are unique per ledger and caller too.
DROP INDEX import_jobs_by_idempotency_key;
CREATE UNIQUE INDEX import_jobs_by_idempotency_key ON import_jobs (ledger_id, created_by, idempotency_key) WHERE idempotency_key IS NOT NULL;
