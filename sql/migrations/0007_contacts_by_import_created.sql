-- The contacts of one import in creation order: `GET …/contacts?importId=…` (default sort
-- +createdAt, or -createdAt) pages through an import of a million rows by walking this index
-- instead of sorting all of the import's rows for every page. Other sorts with importId still
-- sort, bounded by the size of that one import.
DROP INDEX contacts_by_import;
CREATE INDEX contacts_by_import ON contacts (import_id, created_at) WHERE import_id IS NOT NULL;
