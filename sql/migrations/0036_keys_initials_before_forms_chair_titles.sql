-- The matching key of company names (src/normalize.ts companyKey) no longer glues a one-letter
-- word ending a name to a legal form written as initials after it ("Studio X A.G." was "studio
-- xag", so the AG was never dropped; also "Plan B N.V.", "Vitamin C S.A.", "Generation Y A/S"),
-- and drops more legal forms in the spelling that was missed (Limited Partnership, (Proprietary)
-- Limited, Godo/Yugen Kaisha, Kabushiki/Yugen/Godo Gaisha, PCL): a black-box tester saw each
-- reported as a job change that is none. Keys stored under the old rule are recomputed by the
-- same code, as in 0021, 0025 and 0027: every row is read once, only the keys that change are
-- written. Name keys do not change.
-- Contacts matched to a person by name + company whose keys were the person's under the old rule:
-- those whose keys differ under the new one ("Studio X A.G." matched to "Studio XAG") were
-- matched by keys that no longer say "the same", and are unmatched below, as 0027 does.
CREATE TEMP TABLE matched_by_old_keys AS
  SELECT c.seq FROM contacts c JOIN people p ON p.seq = CAST(c.person_id AS INTEGER)
  WHERE c.matched_by = 'name' AND c.name_key = p.name_key AND c.company_key = p.company_key;
UPDATE contacts SET company_key = company_key(company) WHERE company_key IS NOT company_key(company);
UPDATE people SET company_key = company_key(company) WHERE company_key <> company_key(company);
-- Keys that now coincide make namesakes of people who were not ("Rakuten G.K." and "Rakuten Godo
-- Kaisha" with one name): a contact matched to one of them by name + company alone could be
-- either, so it is unmatched as 0021, 0025 and 0027 do; and so is one whose keys no longer are
-- its person's.
UPDATE contacts SET person_id = NULL, is_verified = 0,
  matched_by = CASE WHEN contacts.email IS NOT NULL AND NOT EXISTS (SELECT 1 FROM changes ch WHERE ch.contact_id = contacts.id AND ch.type = 'info' AND ch.field = 'email') THEN NULL ELSE 'ambiguous' END
WHERE matched_by = 'name' AND person_id IS NOT NULL
  AND ((SELECT count(*) FROM people p JOIN people o ON o.name_key = p.name_key AND o.company_key = p.company_key
        WHERE p.seq = CAST(contacts.person_id AS INTEGER)) > 1
    OR (seq IN (SELECT seq FROM matched_by_old_keys)
        AND EXISTS (SELECT 1 FROM people p WHERE p.seq = CAST(contacts.person_id AS INTEGER)
                    AND (p.name_key <> contacts.name_key OR p.company_key <> contacts.company_key))));
DROP TABLE matched_by_old_keys;
-- "Chair" is c_suite where the title makes it the board's chair ("Chair", "Co-Chair", "Chair,
-- Board of Directors" were staff or director), a department's chair is a director, a vice chair of
-- a committee or department no longer c_suite, and "Chair's Assistant" an executive's assistant
-- (src/title-rules.ts, BOARD_CHAIR, DEPARTMENT_CHAIR). Recomputed by the same code as 0028, 0030
-- and 0034, for the titles holding "chair" (LIKE is case-blind for ASCII); only the contacts whose
-- answer changes are written. No change row, no lastInfoChangedAt.
UPDATE contacts SET title_level = title_level(title), title_domain = title_domain(title)
WHERE title LIKE '%chair%'
  AND (title_level IS NOT title_level(title) OR title_domain IS NOT title_domain(title));
