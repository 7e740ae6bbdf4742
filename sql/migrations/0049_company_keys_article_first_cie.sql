-- The matching key of company names (src/normalize.ts companyKey) drops a legal form opening the
-- name ("The", "PT", "JSC") before the suffixes, so that a suffix is never dropped down to it
-- alone: "The Company", "The Limited", "The Co" and "The" were all "the", one company, and
-- "Company, The" was not "The Company" (a black-box tester's missed and false job changes); and it
-- drops "& Co." in French and Spanish ("& Cie", "et Cie", "y Cía", spelt out too). Keys stored under
-- the old rule are recomputed by the same code, as in 0042: every row is read once, only the keys
-- that change are written. Name keys do not change.
-- Contacts matched to a person by name + company whose keys were the person's under the old rule
-- and differ under the new one are unmatched below, as 0042 does.
-- Also: a traffic, flight, mission, game or motion controller is no finance title (a tester's "Air
-- Traffic Controller" was finance): recomputed at the end as 0036 does.
CREATE TEMP TABLE matched_by_old_keys AS
  SELECT c.seq FROM contacts c JOIN people p ON p.seq = CAST(c.person_id AS INTEGER)
  WHERE c.matched_by = 'name' AND c.name_key = p.name_key AND c.company_key = p.company_key;
UPDATE contacts SET company_key = company_key(company) WHERE company_key IS NOT company_key(company);
UPDATE people SET company_key = company_key(company) WHERE company_key <> company_key(company);
-- Keys that now coincide make namesakes of people who were not ("Company, The" and "The Company"
-- with one name): a contact matched to one of them by name + company alone could be either, so it
-- is unmatched as 0042 does; and so is one whose keys no longer are its person's.
UPDATE contacts SET person_id = NULL, is_verified = 0,
  matched_by = CASE WHEN contacts.email IS NOT NULL AND NOT EXISTS (SELECT 1 FROM changes ch WHERE ch.contact_id = contacts.id AND ch.type = 'info' AND ch.field = 'email') THEN NULL ELSE 'ambiguous' END
WHERE matched_by = 'name' AND person_id IS NOT NULL
  AND ((SELECT count(*) FROM people p JOIN people o ON o.name_key = p.name_key AND o.company_key = p.company_key
        WHERE p.seq = CAST(contacts.person_id AS INTEGER)) > 1
    OR (seq IN (SELECT seq FROM matched_by_old_keys)
        AND EXISTS (SELECT 1 FROM people p WHERE p.seq = CAST(contacts.person_id AS INTEGER)
                    AND (p.name_key <> contacts.name_key OR p.company_key <> contacts.company_key))));
DROP TABLE matched_by_old_keys;
-- The controllers that are no finance title (src/title-rules.ts), recomputed by the same code as
-- 0036 does, for the titles holding "controller"; only the contacts whose answer changes are
-- written. No change row, no lastInfoChangedAt.
UPDATE contacts SET title_level = title_level(title), title_domain = title_domain(title)
WHERE title LIKE '%controller%'
  AND (title_level IS NOT title_level(title) OR title_domain IS NOT title_domain(title));
