-- Matching by normalized name + company (SPEC §5: LinkedIn first, authoritative; else e-mail; else
-- name + company when exactly one person fits) also applies to a contact whose e-mail matches no
-- person: only a LinkedIn URL rules the fallback out. The partial index of unmatched contacts
-- therefore covers contacts with an e-mail too.
DROP INDEX contacts_by_name_company;
CREATE INDEX contacts_by_name_company ON contacts (name_key, company_key) WHERE person_id IS NULL AND linkedin IS NULL;
