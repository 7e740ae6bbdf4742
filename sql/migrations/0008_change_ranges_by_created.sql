-- "Changed since" polls in creation order (`GET …/contacts?lastJobChangedAt=…` or
-- `?lastInfoChangedAt=…`, default sort +createdAt, or -createdAt): when few contacts are in the
-- range, the list finds them through one of these indexes and sorts their (created_at, seq) keys
-- without reading a row, then reads only the rows of the page. Through contacts_by_job_change /
-- contacts_by_info_change it read and sorted every row in the range (up to 5,000) on each request.
-- Those two stay: they order the -lastJobChangedAt / -lastInfoChangedAt sorts (ties by seq).
-- At import both columns are NULL, so new entries are appended in creation order.
CREATE INDEX contacts_by_job_change_created ON contacts (ledger_id, last_job_changed_at, created_at);
CREATE INDEX contacts_by_info_change_created ON contacts (ledger_id, last_info_changed_at, created_at);
