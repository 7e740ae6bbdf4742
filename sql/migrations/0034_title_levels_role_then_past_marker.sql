-- A marker after a role ("CEO (Retired)", "VP Sales (former)", "CFO (ret.)", "CEO, retired",
-- "CTO – Retired") makes that role a past one (src/title-rules.ts, ROLE_THEN_PAST): "CEO
-- (Retired)" was c_suite. Recomputed by the same code as 0028 and 0030, for the titles that can
-- hold such a marker (LIKE is case-blind for ASCII); only the contacts whose answer changes are
-- written. No change row, no lastInfoChangedAt.
UPDATE contacts SET title_level = title_level(title), title_domain = title_domain(title)
WHERE (title LIKE '%retired%' OR title LIKE '%former%' OR title LIKE '%(%ret%')
  AND (title_level IS NOT title_level(title) OR title_domain IS NOT title_domain(title));
