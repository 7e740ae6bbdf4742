-- The matching keys (src/normalize.ts) drop apostrophes instead of reading them as spaces
-- ("McDonald's" = "McDonalds", "O'Brien" = "OBrien"), join dotted initials without a last dot
-- ("L.L.C" = "L.L.C." = "L. L. C." = "LLC", "A. O. Smith" = "AO Smith") and drop more legal forms (Limited Liability Company,
-- Aktiengesellschaft, Société Anonyme, S.A.(B.) de C.V., S. de R.L., (P) Ltd, (publ), Berhad, …): a black-box test found each
-- reported as a job change that is none. Keys stored under the old rule are recomputed by the same
-- code (name_key() and company_key() of src/storage/migrate.ts), since a person and a contact
-- compare their stored keys. Company keys: every row is read once (seconds at a million
-- contacts), only the keys that change are written; name keys: only names with an apostrophe.
UPDATE contacts SET company_key = company_key(company) WHERE company_key IS NOT company_key(company);
UPDATE people SET company_key = company_key(company) WHERE company_key <> company_key(company);
UPDATE contacts SET name_key = name_key(name) WHERE name GLOB '*[''’ʼ`´′＇]*' AND name_key IS NOT name_key(name);
UPDATE people SET name_key = name_key(name) WHERE name GLOB '*[''’ʼ`´′＇]*' AND name_key <> name_key(name);
-- Keys that now coincide make namesakes of people who were not ("O'Brien" and "OBrien" at one
-- company): a contact matched to one of them by name + company alone could be either, as when a
-- namesake arrives in a feed (src/tracking/tracker.ts), so it is unmatched the same way
-- (src/tracking/tracked-contacts-repo.ts UNMATCHED_BY: plainly when its address is its own).
UPDATE contacts SET person_id = NULL, is_verified = 0,
  matched_by = CASE WHEN contacts.email IS NOT NULL AND NOT EXISTS (SELECT 1 FROM changes ch WHERE ch.contact_id = contacts.id AND ch.type = 'info' AND ch.field = 'email') THEN NULL ELSE 'ambiguous' END
WHERE matched_by = 'name' AND person_id IS NOT NULL
  AND (SELECT count(*) FROM people p JOIN people o ON o.name_key = p.name_key AND o.company_key = p.company_key
       WHERE p.seq = CAST(contacts.person_id AS INTEGER)) > 1;
