-- `sortBy=+name` / `-name` walk the folded name (name_key: accents removed, lower case, punctuation
-- as spaces, the key name + company matching already uses) instead of `name COLLATE NOCASE`,
-- which folds ASCII letters only and so sorted Émile after Zoe. The index keeps its name, so the
-- list's plans and their test stay as they are. name_key is written with every contact since
-- migration 0003; a row from before it gets lower(name) here so that it still sorts and pages.
UPDATE contacts SET name_key = lower(name) WHERE name_key IS NULL;
DROP INDEX contacts_by_name;
CREATE INDEX contacts_by_name ON contacts (ledger_id, name_key);
