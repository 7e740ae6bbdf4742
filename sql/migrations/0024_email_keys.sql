-- E-mail addresses are matched and filtered "case-insensitive" (SPEC §4.2, §5), and compared by
-- SQLite's NOCASE they were so for A–Z only: `JOSÉ@example.com` never matched a person known as
-- `josé@example.com`, nor did `ann@MÜNCHEN.de` match `ann@münchen.de`, and `email=` did not find
-- them (a tester's case). The key (src/normalize.ts emailKey: NFC, Unicode lower case, the domain
-- in its IDNA form) is computed by the server. For an address of ASCII letters it is SQLite's
-- lower() of it, so only other addresses store it (`email_key`, NULL otherwise), and the e-mail
-- indexes hold `coalesce(email_key, lower(email))`: an insert still writes one e-mail index entry,
-- and this migration rewrites only the rows beyond ASCII (found by GLOB, without calling the
-- function for the others) — a full rewrite took 46 s at 1.5 million contacts.
ALTER TABLE contacts ADD COLUMN email_key TEXT;
UPDATE contacts SET email_key = email_key(email) WHERE email GLOB '*[^ -~]*' AND email_key(email) IS NOT lower(email);
DROP INDEX contacts_by_email;
CREATE INDEX contacts_by_email ON contacts (coalesce(email_key, lower(email))) WHERE email IS NOT NULL;
ALTER TABLE people ADD COLUMN email_key TEXT;
UPDATE people SET email_key = email_key(email) WHERE email GLOB '*[^ -~]*' AND email_key(email) IS NOT lower(email);
DROP INDEX people_by_email;
CREATE INDEX people_by_email ON people (coalesce(email_key, lower(email))) WHERE email IS NOT NULL;
