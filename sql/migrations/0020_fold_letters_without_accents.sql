-- The matching and sorting keys spell out Latin letters that are not a base letter with an accent
-- (src/normalize.ts fold: ø → o, ß → ss, ł → l, æ → ae, đ → d, þ → th…): "Søren Kierkegaard" sorts
-- with the s names instead of after z, and "Łódź Tools" matches "Lodz Tools". Keys stored under the
-- old rule are recomputed by the same code (name_key() and company_key() of src/storage/migrate.ts),
-- since a person and a contact compare their stored keys. Only rows whose text holds one of those
-- letters are rewritten; the others are read once (seconds at a million contacts).
UPDATE contacts SET name_key = name_key(name) WHERE name_key IS NOT name_key(name) AND name GLOB '*[øØßẞłŁđĐðÐæÆœŒþÞıħĦŧŦŋŊĸ]*';
UPDATE contacts SET company_key = company_key(company) WHERE company_key IS NOT company_key(company) AND company GLOB '*[øØßẞłŁđĐðÐæÆœŒþÞıħĦŧŦŋŊĸ]*';
UPDATE people SET name_key = name_key(name) WHERE name_key <> name_key(name) AND name GLOB '*[øØßẞłŁđĐðÐæÆœŒþÞıħĦŧŦŋŊĸ]*';
UPDATE people SET company_key = company_key(company) WHERE company_key <> company_key(company) AND company GLOB '*[øØßẞłŁđĐðÐæÆœŒþÞıħĦŧŦŋŊĸ]*';
