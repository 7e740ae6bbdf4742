-- The matching key of company names drops more legal forms (src/ledger/normalize.ts: Pvt Ltd,
-- Private Limited, A/S, Sp. z o.o., Kft., Ltda, Sdn Bhd, d.o.o., …). Keys stored under the old rule
-- are recomputed by the same code (the company_key() function src/storage/migrate.ts provides):
-- a person and a contact compare their stored keys, so "Acme Pvt Ltd" kept as "acme pvt" and fed
-- again as "acme" would otherwise be a job change that is none. Reads every row once (seconds at
-- a million contacts), writes only the keys that change.
UPDATE contacts SET company_key = company_key(company) WHERE company_key IS NOT company_key(company);
UPDATE people SET company_key = company_key(company) WHERE company_key <> company_key(company);
