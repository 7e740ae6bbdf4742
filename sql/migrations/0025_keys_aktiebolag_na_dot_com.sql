-- The matching key of company names (src/normalize.ts companyKey) drops "Aktiebolag" (Sweden's AB
-- spelt out), a bank's "N.A." ("Wells Fargo Bank, N.A." = "Wells Fargo Bank"), ".com" ending a
-- word ("Amazon.com, Inc." = "Amazon") and the marks ™ ℠ ® ©: a black-box tester saw each
-- reported as a job change that is none. Keys stored under the old rule are recomputed by the
-- same code, as in 0019 and 0021: every row is read once, only the keys that change are written.
UPDATE contacts SET company_key = company_key(company) WHERE company_key IS NOT company_key(company);
UPDATE people SET company_key = company_key(company) WHERE company_key <> company_key(company);
-- Keys that now coincide make namesakes of people who were not ("Acme.com" and "Acme" with one
-- name): a contact matched to one of them by name + company alone is unmatched, as in 0021.
UPDATE contacts SET person_id = NULL, is_verified = 0,
  matched_by = CASE WHEN contacts.email IS NOT NULL AND NOT EXISTS (SELECT 1 FROM changes ch WHERE ch.contact_id = contacts.id AND ch.type = 'info' AND ch.field = 'email') THEN NULL ELSE 'ambiguous' END
WHERE matched_by = 'name' AND person_id IS NOT NULL
  AND (SELECT count(*) FROM people p JOIN people o ON o.name_key = p.name_key AND o.company_key = p.company_key
       WHERE p.seq = CAST(contacts.person_id AS INTEGER)) > 1;
